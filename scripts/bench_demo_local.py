#!/usr/bin/env python3
"""`make demo LLM=local` once, end to end through the real nodes, written down: what the embedded model did.

    scripts/ws_env.sh python scripts/bench_demo_local.py --write docs/measured/demo_local.md

Runs `sayplan_demo --llm local --model MODEL` (what `make demo LLM=local` runs once the model is installed) with the
demo's defaults: the office, "Make Niko a coffee and place the mug on his desk", the injected grasp failure, the
planner node's default aids. The demo's own lines are shown as they come (a CPU model plans for minutes) and go
into the Markdown file with the model file's pinned hash, the runtime, the exit code, and the step where the run
ended. The LLM exchanges are kept next to it (demo_local/llm/); the bag is not (it is the demo's, in a temporary
folder). The file is written whatever the outcome: a failed run is the measurement too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import measured_doc

from sayplan_core.llm import model_packs

ROOT = Path(__file__).resolve().parents[1]
#: the demo's own limit for a task on a CPU model is an hour (sayplan_ros.demo.EMBEDDED_TASK_S); past it and a
#: margin for start-up and shutdown, the demo is stuck, not slow
HANG_GUARD_S = 3600.0 + 600.0
#: lines of the demo's output the file keeps (from the end): a run that loops is still readable
MAX_LINES = 200


def run_demo(llm: str, model: str, out: Path) -> tuple[int, list[str], float]:
    """Run the demo, echo and collect its output; (exit code, lines, wall seconds)."""
    demo = shutil.which("sayplan_demo")
    if demo is None:
        raise SystemExit("bench_demo_local: sayplan_demo is not on PATH: run `make build` and use scripts/ws_env.sh")
    command = [demo, "--llm", llm, "--model", model, "--out", str(out)]
    started = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1
    ) as proc:
        assert proc.stdout is not None
        guard = threading.Timer(HANG_GUARD_S, proc.kill)  # a silent hang ends the reading loop too
        guard.start()
        try:
            for line in proc.stdout:
                print(line, end="", flush=True)
                lines.append(line.rstrip("\n"))
        finally:
            guard.cancel()
        code = proc.wait()
        if time.monotonic() - started >= HANG_GUARD_S:
            lines.append(f"bench_demo_local: the demo was killed after {HANG_GUARD_S:.0f} s")
    return code, lines, time.monotonic() - started


def ended_at(lines: list[str]) -> str:
    """The last event line before the summary: the step where the run ended, in the demo's own words."""
    events = [line for line in lines if line.startswith("[") and "]" in line]
    return events[-1] if events else "(no event was printed)"


def write(path: Path, llm: str, model: str, code: int, lines: list[str], wall: float, kept: Path | None) -> None:
    pack = model_packs.PACKS.get(model)
    summary = next((line for line in reversed(lines) if line.startswith("summary: ")), "(the demo printed no summary)")
    text = [
        "Equivalent to `make demo LLM=local`"
        + ("" if model == model_packs.DEFAULT_PACK else f" MODEL={model}")
        + f", run by this script: `sayplan_demo --llm {llm} --model {model}`.",
        "",
    ]
    if llm != "local":
        text.append(f"Not the embedded model: `--llm {llm}` (a check of this script, not a measurement).")
    elif pack is not None:
        pinned = f"{pack.size:,} bytes, SHA-256 `{pack.sha256}` (checked on load)"
        text.append(f"Model: `{model}`, {pack.file_name}, {pinned}.")
    else:
        text.append(f"Model: `{model}` (a GGUF file that is no known pack).")
    text += [
        "",
        f"Exit code {code} (0: the task succeeded and its goal holds in the scene graph; 1: it did not), "
        f"{wall:.0f} s from start to exit.",
        "",
        f"- {summary}",
        f"- ended at: `{ended_at(lines)}`",
    ]
    if kept is not None:
        text.append(f"- LLM exchanges: {kept.relative_to(path.parent)}/")
    shown = lines[-MAX_LINES:]
    text += ["", "The demo's output" + (f" (its last {MAX_LINES} lines)" if len(lines) > MAX_LINES else "") + ":", ""]
    text += ["```", *shown, "```"]
    measured_doc.write(path, "`make demo LLM=local`: the office demo with the embedded model", "\n".join(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default=model_packs.DEFAULT_PACK, help="a pack name or a .gguf path")
    parser.add_argument("--llm", default="local", help="local; replay checks the script itself in seconds")
    parser.add_argument("--write", type=Path, help="the Markdown file (its exchanges go to a folder beside it)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="demo_local_") as tmp:
        code, lines, wall = run_demo(args.llm, args.model, Path(tmp))
        kept = None
        if args.write is not None:
            runs = sorted(Path(tmp).glob("demo_*/llm"))
            if runs:
                kept = args.write.with_suffix("") / "llm"
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(runs[-1], kept)
            write(args.write, args.llm, args.model, code, lines, wall, kept)
            print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
