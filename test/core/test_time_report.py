"""test/time_report.py, run as pytest runs it: the summary gives each directory's time and test count and lists the
slowest files first, with the time a test spends sleeping counted to its file and folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parents[1]


def test_the_summary_gives_each_directory_its_time_and_the_slowest_files_first(tmp_path: Path) -> None:
    for folder, pause, tests in (("slow", 0.6, 2), ("quick", 0.0, 3)):
        (tmp_path / folder).mkdir()
        body = "\n".join(f"def test_{i}():\n    time.sleep({pause})\n" for i in range(tests))
        (tmp_path / folder / f"test_{folder}.py").write_text(f"import time\n\n{body}")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "time_report", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(TEST_DIR), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out
    summary = out.split("time per directory", 1)[1]
    rows = {
        m[1]: (float(m[2]), int(m[3]))
        for m in re.finditer(r"^(\S+)\s+([\d.]+) s\s+[\d.]+%\s+(\d+) tests", summary, re.M)
    }
    assert rows["slow"][1] == 2 and rows["quick"][1] == 3, summary
    assert rows["slow"][0] >= 1.2, summary  # two sleeps of 0.6 s at least (an upper bound would depend on the load)
    files = re.findall(r"^  (\S+)\s+([\d.]+) s\s+(\d+) tests", summary.split("slowest files:", 1)[1], re.M)
    assert sorted(f[0] for f in files) == ["quick/test_quick.py", "slow/test_slow.py"], summary
    times = [float(f[1]) for f in files]
    assert times == sorted(times, reverse=True), summary  # the slowest first
