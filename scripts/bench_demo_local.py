#!/usr/bin/env python3
"""`make demo LLM=local` once, end to end through the real nodes, written down: what the embedded model did.

    scripts/ws_env.sh python scripts/bench_demo_local.py            # writes docs/measured/demo_local.md

Runs `sayplan_demo --llm local --model MODEL` (what `make demo LLM=local` runs once the model is installed) with the
demo's defaults: the office, "Make Niko a coffee and place the mug on his desk", the injected grasp failure, the
planner node's default aids. The model is checked first (its pinned SHA-256, as every load does). The demo's lines
are shown as they come (a CPU model plans for minutes) and go into the Markdown file with the model file, the
runtime, the machine's load during the run, the exit code, and the step where the run ended; the LLM exchanges go
to a folder beside it (demo_local_llm/). The bag is not kept (it is the demo's, in a temporary folder).

A run of the task is the measurement whether it succeeds or fails (the demo's exit 0 or 1). Any other end (the
stack did not start, the recording failed, an interrupt, the hang guard) is no measurement: it goes to
<name>.failed.md, the file before is left as it was, and the script exits 1. `--llm replay` runs the bundled
transcript instead of a model: a check of this script in seconds (its test), titled as such.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import measured_doc
from bench_real_model import runtime

from sayplan_core.llm import model_packs

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOC = ROOT / "docs" / "measured" / "demo_local.md"
#: the task's limit given to the demo (its own default with the embedded model on a CPU), and the hang guard past it
TASK_S = 3600
HANG_GUARD_S = TASK_S + 600
#: lines of the demo's output the file keeps (from the end): a run that loops is still readable
MAX_LINES = 200
#: the demo's own event lines, `[{stage:>10}] text` (sayplan_ros.demo._say); not the nodes' `[WARN] [...]` lines
EVENT_LINE = re.compile(r"^\[[ a-z_]{10}\] ")
#: the exit codes of a run of the task (sayplan_ros.demo): anything else is no measurement
MEASURED = {
    0: "the task succeeded and its goal holds in the scene graph",
    1: "the task did not succeed, or its goal does not hold in the scene graph",
}


class Run:
    """The demo's output, exit code, wall time, the load seen while it ran, and whether the guard killed it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.code = 0
        self.wall = 0.0
        self.loads: list[float] = []
        self.killed = False


def run_demo(llm: str, model: str, out: Path) -> Run:
    demo = shutil.which("sayplan_demo")
    if demo is None:
        raise SystemExit("bench_demo_local: sayplan_demo is not on PATH: run `make build` and use scripts/ws_env.sh")
    command = [demo, "--llm", llm, "--model", model, "--timeout", str(TASK_S), "--out", str(out)]
    run = Run()
    done = threading.Event()

    def watch(proc: subprocess.Popen[str]) -> None:
        """The load every 10 s, and the kill once the guard's time is up (a silent hang ends the reading too)."""
        began = time.monotonic()
        while not done.wait(10.0):
            run.loads.append(os.getloadavg()[0])
            if time.monotonic() - began > HANG_GUARD_S:
                run.killed = True
                proc.kill()
                return

    started = time.monotonic()
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1
    ) as proc:
        assert proc.stdout is not None
        watcher = threading.Thread(target=watch, args=(proc,), daemon=True)
        watcher.start()
        try:
            for line in proc.stdout:
                print(line, end="", flush=True)
                run.lines.append(line.rstrip("\n"))
        finally:
            done.set()
        run.code = proc.wait()
    run.wall = time.monotonic() - started
    if run.killed:
        run.lines.append(f"bench_demo_local: the demo was killed after {HANG_GUARD_S:.0f} s")
    return run


def ended_at(lines: list[str]) -> str:
    """The demo's last event line: the step where the run ended, in its own words."""
    events = [line for line in lines if EVENT_LINE.match(line)]
    return events[-1] if events else "(no event was printed)"


def _ticks(lines: list[str], least: int) -> str:
    """Backticks one more than the longest run of them in `lines` (at least `least`): no text inside ends them."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(least, longest + 1)


def fenced(lines: list[str]) -> list[str]:
    """A Markdown code block that no run of backticks in `lines` can end early."""
    fence = _ticks(lines, 3)
    return [f"{fence}text", *lines, fence]


def code_span(text: str) -> str:
    """Inline code that backticks in `text` cannot end early."""
    ticks = _ticks([text], 1)
    return f"{ticks} {text} {ticks}" if len(ticks) > 1 else f"`{text}`"


def model_text(llm: str, model: str) -> str:
    """What was loaded, as the loader checked it (for a pack: its pinned hash, verified now)."""
    if llm != "local":
        return f"No model: `--llm {llm}` answers from the bundled transcript (a check of this script)."
    resolved = model_packs.resolve_model(model)
    if resolved.pack is None:
        return f"Model: `{resolved.path}`, a GGUF file that is no known pack ({resolved.note})."
    pack = resolved.pack
    return (
        f"Model: `{pack.name}`, {pack.file_name}, {pack.size:,} bytes, SHA-256 `{pack.sha256}` ({resolved.note} "
        f"before the run). Runtime: {runtime()}."
    )


def write(path: Path, llm: str, model: str, described: str, run: Run, kept: Path | None) -> None:
    summary = next((x for x in reversed(run.lines) if x.startswith("summary: ")), "(the demo printed no summary)")
    measured = run.code in MEASURED and not run.killed
    meaning = (
        MEASURED[run.code]
        if measured
        else "no run of the task (the stack did not start, the recording failed, an interrupt, or the hang guard: "
        "see the output)"
    )
    loads = f"load average {min(run.loads):.1f}-{max(run.loads):.1f}" if run.loads else "load not sampled"
    text = [
        (
            "Equivalent to `make demo LLM=local"
            + ("" if model == model_packs.DEFAULT_PACK else f" MODEL={model}")
            + "`"
            if llm == "local"
            else "A check of this script, not a measurement"
        )
        + f": `sayplan_demo --llm {llm} --model {model} --timeout {TASK_S}` with the demo's defaults.",
        "",
        described,
        "",
        f"Exit code {run.code}: {meaning}. {run.wall:.0f} s from start to exit; {loads} (every 10 s, 2 cores).",
        "",
        f"- {summary}",
        f"- ended at: {code_span(ended_at(run.lines))}",
    ]
    if kept is not None:
        text.append(f"- LLM exchanges: {kept.name}/")
    shown = run.lines[-MAX_LINES:]
    more = f" (its last {MAX_LINES} of {len(run.lines)} lines)" if len(run.lines) > MAX_LINES else ""
    text += ["", f"The demo's output{more}:", "", *fenced(shown)]
    what = "the embedded model" if llm == "local" else f"--llm {llm}"
    measured_doc.write(path, f"`make demo LLM=local`: the office demo with {what}", "\n".join(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default=model_packs.DEFAULT_PACK, help="a pack name or a .gguf path")
    parser.add_argument("--llm", default="local", choices=("local", "replay"), help="replay: check this script")
    parser.add_argument("--write", type=Path, default=DEFAULT_DOC, help="the Markdown file (.md) to write")
    args = parser.parse_args(argv)
    doc: Path = args.write
    if doc.suffix != ".md" or not doc.parent.is_dir():
        parser.error(f"--write {doc}: a .md file in a folder that exists")
    try:
        described = model_text(args.llm, args.model)
    except model_packs.ModelPackError as exc:
        parser.error(str(exc))
    with tempfile.TemporaryDirectory(prefix="demo_local_") as tmp:
        run = run_demo(args.llm, args.model, Path(tmp))
        measured = run.code in MEASURED and not run.killed
        target = doc if measured else doc.with_name(f"{doc.stem}.failed.md")
        kept = target.with_name(f"{target.stem}_llm")
        shutil.rmtree(kept, ignore_errors=True)  # never an earlier run's exchanges beside this run's file
        runs = sorted(Path(tmp).glob("demo_*/llm"))
        if runs:
            shutil.copytree(runs[-1], kept)
        write(target, args.llm, args.model, described, run, kept if runs else None)
    if not measured:
        print(f"bench_demo_local: exit {run.code}: no run of the task; {doc} is left as it was", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
