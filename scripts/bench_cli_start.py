"""Start-up cost of the `sayplan` command, side by side with importing networkx (the yardstick of issue 42).

    scripts/ws_env.sh python scripts/bench_cli_start.py --reps 15 --write docs/measured/cli_start.md

Each command runs in a fresh interpreter, the commands interleaved round by round so the machine's load falls on
each alike; the figure is the child's CPU time (user + system, from getrusage), the median over the rounds.
The target: `sayplan --help` and `sayplan env list` within 1.3x of `python -c 'import networkx'`.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measured_doc import publish

TARGET = 1.3


def commands() -> dict[str, list[str]]:
    sayplan = shutil.which("sayplan")
    if sayplan is None:
        sys.exit("bench_cli_start: `sayplan` is not on PATH; run through scripts/ws_env.sh after `make build`")
    return {
        "python -c 'import networkx'": [sys.executable, "-c", "import networkx"],
        "sayplan --help": [sayplan, "--help"],
        "sayplan env list": [sayplan, "env", "list"],
        "sayplan plan --help": [sayplan, "plan", "--help"],
    }


def cpu_seconds(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="rounds (each runs every command once)")
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    runs = commands()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(max(1, args.reps)):
        for name, command in runs.items():
            times[name].append(cpu_seconds(command))
    base = statistics.median(times["python -c 'import networkx'"])
    lines = [
        f"CPU time per command (user + system), median of {args.reps} interleaved rounds; target <= {TARGET}x "
        "the yardstick.",
        "",
        "| command | CPU s (median) | min | max | x yardstick |",
        "|---|---|---|---|---|",
    ]
    for name, values in times.items():
        median = statistics.median(values)
        lines.append(f"| `{name}` | {median:.3f} | {min(values):.3f} | {max(values):.3f} | {median / base:.2f}x |")
    publish(args.write, "Start-up of the sayplan command", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
