"""The monitor page in a real browser: headless Chromium shows a `sayplan_demo --foxglove` run as it happens.

The demo runs as a process (`--foxglove 0 --stay`: any free ports, and the nodes stay up after the run until the
test's SIGINT, so a browser that is slow to start still sees the run, whole: the bridge replays the plan and the
event history to a viewer that joins). Chromium (the distribution's package: `scripts/install_deps.sh monitor`) is
driven over the DevTools protocol with the `websockets` client, reads the page the bridge serves, and the test
checks what the page shows against what the demo printed: every step of the final plan, each succeeded, the result
"success", the planner's goals, LLM calls and tokens and the nodes its search expanded, one entity per graph node, no fault latched, the robot with no route left, and no resource fetched. Nothing is timed; the waits are
hang guards. SAYPLAN_REGENERATE_SCREENSHOTS=1 saves the page as docs/howto/img/monitor_page.png.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip("foxglove", reason="foxglove-sdk is not installed: pip install -r requirements/monitor.txt")

from websockets.sync.client import ClientConnection, connect

from sayplan_core.envs import load_env

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: a headless Chromium must see the demo's run while it goes

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "howto" / "img" / "monitor_page.png"
#: hang guards only: a loaded two-core machine must pass, so these are far above what a run takes
START_S = 120.0
WAIT_S = 300.0
VIEWPORT = {"width": 1400, "height": 1000}

#: what the page shows, read from its elements
SNAPSHOT = """JSON.stringify({
  conn: document.getElementById("conn").className,
  result: document.getElementById("result").textContent,
  instruction: document.getElementById("instruction").textContent,
  steps: [...document.querySelectorAll("#steps li")].map(
    li => [li.querySelector(".step").textContent, li.querySelector(".status").textContent]),
  entities: document.getElementById("graph-count").textContent,
  latch: document.getElementById("latch").textContent,
  robot: document.getElementById("robot").textContent,
  events: document.querySelectorAll("#events li").length,
  planner: document.getElementById("planner-summary").textContent,
  searched: [...document.querySelectorAll("#planner-steps li")].map(li => li.textContent),
  diagnostics: document.querySelectorAll("#diagnostics tr").length,
  fetched: performance.getEntriesByType("resource").map(r => r.name),
  painted: (() => {
    const canvas = document.getElementById("graph");
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) count++;
    return count;
  })(),
})"""


def chromium_binary() -> str | None:
    for name in (os.environ.get("SAYPLAN_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and (path := shutil.which(name)):
            return path
    return None


class DevTools:
    """One page of a headless Chromium, driven over the DevTools protocol (a flat session on one target)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        number = next(self._ids)
        request: dict[str, Any] = {"id": number, "method": method, "params": params}
        if session is not None:
            request["sessionId"] = session
        self.ws.send(json.dumps(request))
        deadline = time.monotonic() + START_S
        while True:  # events and other answers arrive in between: skip them
            answer = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if answer.get("id") == number:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return dict(answer.get("result", {}))

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, self.session, **params)

    def evaluate(self, expression: str) -> Any:
        answer = self.page("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise AssertionError(f"the page's script failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def open(self, url: str) -> None:
        """Navigate to `url` and wait until it has loaded (navigating answers before the page is there)."""
        self.page("Page.navigate", url=url)
        loaded = f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
        deadline = time.monotonic() + START_S
        while not self.evaluate(loaded):
            assert time.monotonic() < deadline, f"{url} did not load within {START_S} s"
            time.sleep(0.1)

    def until(self, predicate: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        """Read the page until `predicate` holds of what it shows; that view (the last one in the message if not)."""
        deadline = time.monotonic() + WAIT_S
        shown: dict[str, Any] = {}
        while time.monotonic() < deadline:
            shown = json.loads(self.evaluate(SNAPSHOT))
            if predicate(shown):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"the page did not show {what} within {WAIT_S} s; it shows {shown}")

    def screenshot(self, path: Path) -> None:
        size = self.page("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": max(size["height"], 600), "scale": 1}
        shot = self.page("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@contextmanager
def headless_chromium(binary: str, profile: Path) -> Iterator[DevTools]:
    """Chromium on a DevTools port it picks (read from the profile's DevToolsActivePort), closed afterwards."""
    command = [
        binary,
        "--headless",
        "--no-sandbox",  # the tests run as root in a container, where Chromium's sandbox cannot start
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    browser = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_S
        while not (port_file.is_file() and len(port_file.read_text().split()) >= 2):
            if browser.poll() is not None:
                output = browser.stderr.read() if browser.stderr else ""
                if "snap" in output:
                    pytest.skip(f"{binary} is the snap wrapper, which cannot run here: {output.strip()[-300:]}")
                raise AssertionError(f"{binary} exited with {browser.returncode} before it listened: {output[-2000:]}")
            assert time.monotonic() < deadline, f"{binary} did not open its DevTools port within {START_S} s"
            time.sleep(0.1)
        port, path = port_file.read_text().split()[:2]
        with connect(f"ws://127.0.0.1:{port}{path}", open_timeout=START_S, max_size=None) as ws:
            tools = DevTools(ws)
            tools.page("Emulation.setDeviceMetricsOverride", deviceScaleFactor=1, mobile=False, **VIEWPORT)
            yield tools
            tools.call("Browser.close")
        browser.wait(timeout=START_S)
    finally:
        if browser.poll() is None:
            browser.kill()
            browser.wait()


def test_the_monitor_page_shows_a_demo_run_in_headless_chromium(ros: Any, tmp_path: Path) -> None:
    binary = chromium_binary()
    if binary is None:
        reason = (
            "no Chromium (chromium, chromium-browser or $SAYPLAN_CHROMIUM) on PATH: `make monitor` "
            "(scripts/install_deps.sh monitor) installs the distribution's package"
        )
        print(f"test_monitor_page: {reason}")
        pytest.skip(reason)
    started = time.perf_counter()
    command = ["sayplan_demo", "--foxglove", "0", "--stay", "--skill-delay", "0.3", "--out", str(tmp_path / "runs")]
    own_domain = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}  # the fixture's: no other test's nodes
    demo = subprocess.Popen(command, env=own_domain, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert demo.stdout is not None
        first = demo.stdout.readline()
        lines.append(first)
        reader = threading.Thread(target=lambda: lines.extend(demo.stdout or ()), daemon=True)
        reader.start()  # the demo never blocks on a full pipe
        match = re.search(r"the monitor page: (http://127\.0\.0\.1:\d+/)", first)
        assert match, first
        with headless_chromium(binary, tmp_path / "profile") as browser:
            browser.open(match.group(1))
            shown = browser.until(
                lambda s: (
                    s["result"] == "success"
                    and {status for _, status in s["steps"]} == {"succeeded"}
                    and "plan_task goals" in s["planner"]
                ),
                'the result "success", every step succeeded and the planner\'s goals',
            )
            seen = time.perf_counter()
            if os.environ.get("SAYPLAN_REGENERATE_SCREENSHOTS") == "1":
                browser.screenshot(SCREENSHOT)
                print(f"\ntest_monitor_page: wrote {SCREENSHOT.relative_to(ROOT)}")
        deadline = time.monotonic() + WAIT_S  # a SIGINT before the run is over would cancel it: wait for --stay
        while not any("the nodes stay up until Ctrl-C" in line for line in lines) and demo.poll() is None:
            assert time.monotonic() < deadline, f"the demo did not finish its run within {WAIT_S} s"
            time.sleep(0.1)
        demo.send_signal(signal.SIGINT)  # ends --stay; the exit status is the run's
        demo.wait(timeout=WAIT_S)
        reader.join(timeout=WAIT_S)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    output = "".join(lines)
    assert demo.returncode == 0, output
    assert "summary: success" in output
    # the final plan as the demo printed it ("[ executing] 3/15 goto(kitchen) succeeded"), step by step
    printed = dict(re.findall(r"\] (\d+)/15 (\S+) succeeded", output))
    assert [step for step, _ in shown["steps"]] == [printed[str(n)] for n in range(1, 16)]
    assert shown["conn"] == "connected"
    assert shown["instruction"] and shown["events"] > 15 and shown["diagnostics"] > 0
    assert shown["entities"] == f"({len(load_env('office'))} entities)"
    assert shown["latch"] == "no fault latched"
    # the planner's goals, LLM calls and tokens as the demo's summary counts them, and the nodes it expanded
    summary = re.search(r"summary: success .* (\d+ plan_task goals, \d+ LLM calls, \d+ tokens)", output)
    assert summary and shown["planner"] == f"({summary.group(1)})", shown["planner"]
    printed_search = re.findall(r"\[  planning\] search (\S+), round", output)
    shown_search = [re.match(r"goal 1 #\d+ search (\w+) (\S+),", line) for line in reversed(shown["searched"])]
    searched = [m.groups() for m in shown_search if m]
    assert printed_search and searched == [("expand", node) for node in printed_search], shown["searched"]
    assert re.fullmatch(r"robot: at \(-?[\d.]+, -?[\d.]+\); route ahead: 0 poses", shown["robot"]), shown["robot"]
    assert shown["painted"] > 1000  # the graph is drawn
    assert shown["fetched"] == []  # nothing loaded besides the page itself
    print(f"\ntest_monitor_page: the page showed the whole run {seen - started:.1f} s after the demo started")
