"""DDS domains for tests: each test (and the subprocesses it starts) claims one that no other run on the machine
holds, with a lock file."""

from __future__ import annotations

import fcntl
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

#: Domains the tests claim. Each test holds a lock on its domain (a file under the temp folder, flock: released by
#: the kernel however the process ends), so concurrent test runs and their subprocesses never share one; a domain
#: released less than COOL_DOWN_S ago is passed over while another is free, because the participants of a process a
#: test killed stay listed by DDS until their lease ends (20 s with Fast DDS's defaults).
DOMAINS = range(101, 233)
COOL_DOWN_S = 25.0
_LOCKS = Path(tempfile.gettempdir()) / "sayplan-ros-domains"


def claim_domain() -> tuple[int, int]:
    """A free domain and the descriptor holding its lock (see DOMAINS)."""
    _LOCKS.mkdir(exist_ok=True)
    start = random.SystemRandom().randrange(len(DOMAINS))
    order = [DOMAINS[(start + i) % len(DOMAINS)] for i in range(len(DOMAINS))]
    cooling: list[tuple[int, int]] = []
    for domain in order:
        fd = os.open(_LOCKS / f"{domain}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        released = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if released and time.time() - float(released or 0) < COOL_DOWN_S:
            cooling.append((domain, fd))
            continue
        for _, other in cooling:
            os.close(other)
        return domain, fd
    if cooling:  # every free domain was used moments ago: take the first of them anyway
        for _, other in cooling[1:]:
            os.close(other)
        return cooling[0]
    raise RuntimeError(f"no free ROS domain in {DOMAINS.start}..{DOMAINS.stop - 1} (see {_LOCKS})")


def release_domain(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(time.time()).encode("ascii"), 0)
    os.close(fd)


def run_on_own_domain(command: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a script that takes `--domain N` (a bench, the soak) on a domain claimed for it; its output as text."""
    domain, lock = claim_domain()
    try:
        return subprocess.run(
            [*command, "--domain", str(domain)], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    finally:
        release_domain(lock)
