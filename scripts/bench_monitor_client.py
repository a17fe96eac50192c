"""A monitor client that never reads, side by side with none: does it change sayplan_demo's result or time? (issue 41)

    scripts/ws_env.sh python scripts/bench_monitor_client.py --rounds 10 --write docs/measured/monitor_client.md

Each round runs `sayplan_demo --foxglove 0` twice, in turn: with no viewer, and with a viewer that connects as
Foxglove does (subprotocol foxglove.sdk.v1), subscribes to every channel the bridge advertises and then never reads
its socket again (a receive buffer of RCVBUF bytes, so the kernel's buffers fill within the first messages and the
bridge's server is left holding the rest). The arms alternate within each round, so the machine's load falls on
both alike. Reported per arm: the median wall time of the demo (start to exit) and of its task (the time its
summary prints, from sending the task to its result), their ratio stalled / none, and every run's result, which
must be success.

Then the drop check, on foxglove-sdk alone (the server and option foxglove_bridge uses, `message_backlog_size` =
the bridge's `client_backlog`): a server with a backlog of DROP_BACKLOG messages, the same never-reading viewer, and
DROP_MESSAGES messages logged as fast as they come. It reports how long the logging took (it must not wait for the
viewer), how many messages the viewer then got when it finally read, whether the last one logged was among them
(drop-oldest keeps the newest) and whether the viewer was still connected (a data message dropped never closes it).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measured_doc import publish

SUBPROTOCOL = "foxglove.sdk.v1"
ARMS = ("no client", "stalled client")
RCVBUF = 4096  # the stalled viewer's receive buffer, bytes (the kernel may round it up)
DEMO_TIMEOUT_S = 600.0  # a hang guard: a demo run takes seconds
DROP_BACKLOG = 16
DROP_MESSAGES = 20000
DROP_PAYLOAD = 1000  # bytes per logged message


# ----------------------------------------------------------------------------- a viewer that stops reading
def _read_exact(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    """One WebSocket frame from the server (never masked, never fragmented by foxglove-sdk): (opcode, payload)."""
    first, second = _read_exact(sock, 2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack(">H", _read_exact(sock, 2))[0]
    elif length == 127:
        length = struct.unpack(">Q", _read_exact(sock, 8))[0]
    return first & 0x0F, _read_exact(sock, length)


def send_text(sock: socket.socket, text: str) -> None:
    """A client's text frame (masked, as RFC 6455 requires of clients)."""
    payload, mask = text.encode("utf-8"), os.urandom(4)
    length = len(payload)
    header = bytes([0x81]) + (
        bytes([0x80 | length])
        if length < 126
        else bytes([0x80 | 126]) + struct.pack(">H", length)
        if length < 1 << 16
        else bytes([0x80 | 127]) + struct.pack(">Q", length)
    )
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def stalled_viewer(port: int, timeout_s: float = 60.0) -> tuple[socket.socket, int]:
    """Connect, subscribe to every advertised channel, and hand back the socket, never to be read again (until the
    caller chooses to); also the number of channels subscribed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)  # before connect: it sets the TCP window
    sock.settimeout(timeout_s)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {SUBPROTOCOL}\r\n\r\n"
        ).encode()
    )
    response = b""
    while b"\r\n\r\n" not in response:
        response += _read_exact(sock, 1)
    if b" 101 " not in response.split(b"\r\n", 1)[0] or SUBPROTOCOL.encode() not in response:
        raise ConnectionError(f"no WebSocket upgrade to {SUBPROTOCOL}: {response[:200]!r}")
    channels: list[int] = []
    while not channels:
        opcode, payload = read_frame(sock)
        if opcode == 1 and json.loads(payload).get("op") == "advertise":
            channels = [int(c["id"]) for c in json.loads(payload)["channels"]]
    subscriptions = [{"id": n, "channelId": c} for n, c in enumerate(channels)]
    send_text(sock, json.dumps({"op": "subscribe", "subscriptions": subscriptions}))
    return sock, len(channels)


# ----------------------------------------------------------------------------- the demo, with and without it
@dataclass
class Run:
    arm: str
    wall_s: float
    task_s: float
    success: bool
    channels: int  # subscribed by the stalled viewer (0: none)
    held: int = 0  # data messages the stalled viewer read once the demo had ended (what reached it at all)


SUMMARY = re.compile(r"summary: (\S+) .*\| ([\d.]+) s\n")


def run_demo(arm: str, out: Path, domain: int | None) -> Run:
    env = dict(os.environ) if domain is None else {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    started = time.perf_counter()
    demo = subprocess.Popen(
        ["sayplan_demo", "--foxglove", "0", "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    viewer: socket.socket | None = None
    channels = 0
    try:
        assert demo.stdout is not None
        first = demo.stdout.readline()
        port = re.search(r"ws://127\.0\.0\.1:(\d+)", first)
        if port is None:
            raise RuntimeError(f"sayplan_demo printed no bridge address: {first!r}")
        if arm == "stalled client":
            viewer, channels = stalled_viewer(int(port.group(1)))
        rest, _ = demo.communicate(timeout=DEMO_TIMEOUT_S)
        wall = time.perf_counter() - started
        held = 0 if viewer is None else read_out(viewer)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        if viewer is not None:
            viewer.close()
    summary = SUMMARY.search(rest)
    if summary is None:
        raise RuntimeError(f"sayplan_demo printed no summary (exit {demo.returncode}):\n{first}{rest[-3000:]}")
    success = demo.returncode == 0 and summary.group(1) == "success"
    return Run(arm, wall, float(summary.group(2)), success, channels, held)


def read_out(sock: socket.socket, quiet_s: float = 1.0) -> int:
    """Read the stalled viewer's socket to its end (or until nothing came for `quiet_s`): the data messages."""
    sock.settimeout(quiet_s)
    count = 0
    try:
        while True:
            opcode, payload = read_frame(sock)
            if opcode == 8:
                break
            count += opcode == 2 and payload[:1] == b"\x01"
    except (TimeoutError, ConnectionError, OSError):
        pass
    return count


# ----------------------------------------------------------------------------- foxglove-sdk's per-viewer queue
@dataclass
class DropCheck:
    log_s: float  # to log every message, the viewer stalled
    received: int  # data messages the viewer got once it read
    newest_kept: bool  # the last message logged was among them
    connected: bool  # the server had not closed the viewer


def drop_check(backlog: int = DROP_BACKLOG, messages: int = DROP_MESSAGES) -> DropCheck:
    import foxglove
    from foxglove.websocket import ChannelView, Client, ServerListener

    subscribed = threading.Event()

    class Listener(ServerListener):
        def on_subscribe(self, client: Client, channel: ChannelView) -> None:
            subscribed.set()

    context = foxglove.Context()
    channel = foxglove.Channel("/stalled", message_encoding="json", context=context)
    server = foxglove.start_server(
        host="127.0.0.1", port=0, context=context, message_backlog_size=backlog, server_listener=Listener()
    )
    try:
        sock, _ = stalled_viewer(server.port)
        if not subscribed.wait(60.0):  # a hang guard
            raise RuntimeError("the stalled viewer's subscription never reached the server")
        filler = "x" * DROP_PAYLOAD
        started = time.perf_counter()
        for number in range(messages):
            channel.log(json.dumps({"n": number, "filler": filler}).encode())
        log_s = time.perf_counter() - started
        time.sleep(0.5)  # let the server's writer put what it still holds into the socket
        sock.settimeout(1.0)
        seen: list[int] = []
        connected = True
        try:
            while True:
                opcode, payload = read_frame(sock)
                if opcode == 8:  # close
                    connected = False
                    break
                if opcode == 2 and payload[0] == 0x01:  # message data: op, subscription, log time, then JSON
                    seen.append(int(json.loads(payload[13:])["n"]))
        except TimeoutError:
            pass  # nothing more is coming: read out
        except ConnectionError:
            connected = False
        sock.close()
        return DropCheck(log_s, len(seen), bool(seen) and seen[-1] == messages - 1, connected)
    finally:
        server.stop()


# ----------------------------------------------------------------------------- the report
def report(runs: list[Run], rounds: int, check: DropCheck) -> str:
    lines = [
        f"`sayplan_demo --foxglove 0` (replayed LLM), {rounds} rounds, each running both arms in turn; the stalled "
        f"viewer subscribes to every channel ({max(r.channels for r in runs)}) with a {RCVBUF}-byte receive buffer "
        "and never reads.",
        "",
        "| arm | runs | success | demo wall s (median) | min | max | task s (median) | min | max |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    medians: dict[str, tuple[float, float]] = {}
    for arm in ARMS:
        mine = [r for r in runs if r.arm == arm]
        walls, tasks = [r.wall_s for r in mine], [r.task_s for r in mine]
        medians[arm] = (statistics.median(walls), statistics.median(tasks))
        lines.append(
            f"| {arm} | {len(mine)} | {sum(r.success for r in mine)}/{len(mine)} | {medians[arm][0]:.2f} | "
            f"{min(walls):.2f} | {max(walls):.2f} | {medians[arm][1]:.2f} | {min(tasks):.2f} | {max(tasks):.2f} |"
        )
    wall_ratio = medians[ARMS[1]][0] / medians[ARMS[0]][0]
    task_ratio = medians[ARMS[1]][1] / medians[ARMS[0]][1]
    every = all(r.success for r in runs)
    lines += [
        "",
        f"stalled / none: demo wall time {wall_ratio:.2f}x, task time {task_ratio:.2f}x; "
        f"every run's result success: {'yes' if every else 'NO'}",
        "",
        "Data messages the stalled viewer read once its demo had ended (what reached it through the socket buffers "
        f"while it did not read): {', '.join(str(r.held) for r in runs if r.arm == ARMS[1])}.",
        "",
        f"Drop check (foxglove-sdk alone, message_backlog_size {DROP_BACKLOG}): {DROP_MESSAGES} messages of about "
        f"{DROP_PAYLOAD} bytes logged to a stalled viewer in {check.log_s:.3f} s; the viewer, reading at last, got "
        f"{check.received} of them; the newest kept: {'yes' if check.newest_kept else 'no'}; still connected: "
        f"{'yes' if check.connected else 'no'}.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds (each runs both arms once)")
    parser.add_argument("--domain", type=int, help="ROS_DOMAIN_ID for the demos (default: the environment's)")
    parser.add_argument("--write", type=Path, help="also write the figures to this Markdown file")
    args = parser.parse_args(argv)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench_monitor_client_") as folder:
        for round_index in range(max(1, args.rounds)):
            for arm in ARMS if round_index % 2 == 0 else ARMS[::-1]:  # each arm first in every other round
                run = run_demo(arm, Path(folder) / f"{round_index}_{arm.split()[0]}", args.domain)
                runs.append(run)
                print(f"round {round_index + 1} {arm}: {run.wall_s:.2f} s, task {run.task_s:.2f} s, "
                      f"{'success' if run.success else 'FAILED'}", file=sys.stderr)  # fmt: skip
    text = report(runs, max(1, args.rounds), drop_check())
    publish(args.write, "A monitor viewer that never reads, beside none", text)
    return 0 if all(r.success for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
