"""Where the bench scripts write their figures: a Markdown file under docs/measured/ that says what produced it.

The docs link to these files instead of copying figures by hand, so a figure and the command that measured it stay
together. The header records the date and the machine's load, because timings on a shared machine vary with it.
"""

from __future__ import annotations

import datetime
import os
import shlex
import sys
from pathlib import Path


def header(title: str) -> str:
    """`# title` and one line: the command that was run, when, on how many cores, under what load."""
    command = "scripts/ws_env.sh python " + shlex.join(sys.argv)
    load = os.getloadavg()[0]
    when = datetime.date.today().isoformat()
    return (
        f"# {title}\n\nWritten by `{command}` on {when} ({os.cpu_count()} cores, load average {load:.1f} "
        "when written).\n\n"
    )


def write(path: Path, title: str, text: str) -> None:
    """Write `text` under the header to `path` (its folder must exist)."""
    path.write_text(header(title) + text.rstrip("\n") + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def publish(path: Path | None, title: str, text: str) -> None:
    """Print the figures, and write them under the header to `path` when given (`--write`)."""
    print(text)
    if path is not None:
        write(path, title, text)
