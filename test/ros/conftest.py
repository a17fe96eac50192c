"""In-process rclpy fixtures: each test gets its own context and ROS_DOMAIN_ID."""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Third-party messages are checked field by field (read when a message module is first imported, so set before
# any is): an int assigned to a float64 field is refused instead of being sent as garbage.
os.environ.setdefault("ROS_PYTHON_CHECK_FIELDS", "1")

rclpy = pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
from rclpy.executors import MultiThreadedExecutor  # noqa: E402

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


class RosHarness:
    """A context, an executor spinning in a background thread, and helpers to wait on DDS."""

    def __init__(self, domain_id: int) -> None:
        self.domain_id = domain_id
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self._nodes: list[Any] = []
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # the executor raises on shutdown in some distros
            if self.context.ok():
                raise

    def add(self, node: Any) -> Any:
        self._nodes.append(node)
        self.executor.add_node(node)
        return node

    def node(self, name: str) -> Any:
        return self.add(rclpy.create_node(name, context=self.context))

    def call(self, client: Any, request: Any, timeout: float = 10.0) -> Any:
        if not client.wait_for_service(timeout_sec=timeout):
            raise AssertionError(f"service {client.srv_name} not available on domain {self.domain_id}")
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer from {client.srv_name} within {timeout} s")
            time.sleep(0.01)
        return future.result()

    def clear_fault(self, node: Any, timeout: float = 10.0) -> Any:
        """Call `node`'s ~/clear_fault (std_srvs/Trigger) as an operator would; returns the response."""
        from std_srvs.srv import Trigger

        client = self.node(f"operator_clear_{len(self._nodes)}").create_client(Trigger, node.clear_fault_service)
        return self.call(client, Trigger.Request(), timeout)

    @staticmethod
    def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(0.02)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=2.0)
        for node in self._nodes:
            node.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=5.0)


@pytest.fixture
def ros() -> Iterator[RosHarness]:
    domain, lock = claim_domain()
    harness = RosHarness(domain)
    try:
        yield harness
    finally:
        harness.close()
        release_domain(lock)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """DDS integration tests get one rerun: a rare, still unidentified flake (about 1 in 10 full runs) must not
    hide behind a red CI, nor be hidden by it. pytest prints every rerun in its summary ('N rerun')."""
    for item in items:
        if item.get_closest_marker("ros") is not None:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1))
