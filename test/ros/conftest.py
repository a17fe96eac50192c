"""In-process rclpy fixtures: each test gets its own context and ROS_DOMAIN_ID."""

from __future__ import annotations

import os
import sys
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
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, ShutdownException  # noqa: E402
from ros_domains import claim_domain, release_domain  # noqa: E402


def poll(predicate: Callable[[], bool], timeout: float) -> bool:
    """Whether `predicate` came true within `timeout`: looked at after 1 ms, then at twice the interval up to every
    20 ms (what is waited for over DDS takes a few ms; the old fixed 20 ms made most waits last 20 ms)."""
    deadline, pause = time.monotonic() + timeout, 0.001
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 0.02)
    return True


class RosHarness:
    """A context, an executor spinning in a background thread, and helpers to wait on DDS."""

    def __init__(self, domain_id: int) -> None:
        self.domain_id = domain_id
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self._nodes: list[Any] = []
        self._destroyed = 0  # nodes the test destroyed while the others spin (`destroy`)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception as exc:  # the executor raises on shutdown in some distros
                if not self.context.ok() or isinstance(exc, (ShutdownException, ExternalShutdownException)):
                    return
                if self._destroyed and type(exc).__name__ == "RCLError" and "is invalid" in str(exc):
                    # a message for a node the test destroyed mid-work (`destroy`, what some tests check) was
                    # ready when it went: the harness's other nodes keep spinning, as they would in their own
                    # processes; said on stderr (shown with a failure), never silent. With no node destroyed
                    # that way, the error is a bug and ends the spin.
                    print(f"ros harness: went on past an entity of a destroyed node: {exc}", file=sys.stderr)
                    continue
                raise

    def add(self, node: Any, bring_up: bool = True) -> Any:
        """Spin `node`; a managed (lifecycle) node is brought to ACTIVE through its real transitions, as its
        lifecycle manager would (a transition that fails raises its own exception, as a constructor would),
        unless `bring_up` is False (it then waits unconfigured, as a node started alone does)."""
        from sayplan_ros.lifecycle import ManagedNode

        self._nodes.append(node)
        self.executor.add_node(node)
        if bring_up and isinstance(node, ManagedNode):
            node.bring_up()
        return node

    def wait_active(self, name: str, timeout: float = 60.0) -> None:
        """Until the managed node `name` (in another process, say) reports ACTIVE on its lifecycle get_state: its
        servers exist from configure and refuse until it is activated."""
        from lifecycle_msgs.msg import State
        from lifecycle_msgs.srv import GetState

        state = self.node(f"state_{len(self._nodes)}").create_client(GetState, f"/{name}/get_state")
        self.wait_for(
            lambda: self.call(state, GetState.Request(), 30.0).current_state.id == State.PRIMARY_STATE_ACTIVE,
            timeout=timeout,
            what=f"{name} to activate",
        )

    def destroy(self, node: Any) -> None:
        """Stop spinning `node` and destroy it while the others go on, as its process ending would."""
        self._destroyed += 1
        if node in self._nodes:
            self._nodes.remove(node)
        self.executor.remove_node(node)
        node.destroy_node()

    def node(self, name: str) -> Any:
        return self.add(rclpy.create_node(name, context=self.context))

    def call(self, client: Any, request: Any, timeout: float = 10.0) -> Any:
        """The answer to `request`, woken by the answer itself (a poll every 10 ms cost a few ms per call, and the
        suite makes thousands); up to `timeout` for the service to appear, and as long again for the answer."""
        if not poll(client.service_is_ready, timeout):
            raise AssertionError(f"service {client.srv_name} not available on domain {self.domain_id}")
        future = client.call_async(request)
        answered = threading.Event()
        future.add_done_callback(lambda _: answered.set())
        if not answered.wait(timeout) and not future.done():
            raise AssertionError(f"no answer from {client.srv_name} within {timeout} s")
        return future.result()

    def clear_fault(self, node: Any, timeout: float = 10.0) -> Any:
        """Call `node`'s ~/clear_fault (std_srvs/Trigger) as an operator would; returns the response."""
        from std_srvs.srv import Trigger

        client = self.node(f"operator_clear_{len(self._nodes)}").create_client(Trigger, node.clear_fault_service)
        return self.call(client, Trigger.Request(), timeout)

    @staticmethod
    def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
        if not poll(predicate, timeout):
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")

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


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """DDS integration tests get one rerun, never silent: test/rerun_report.py prints the first failure of every
    rerun as it happens and counts the tests that passed only on a rerun in the summary, so a flake is seen and
    can be traced to its root (as the Nav2 clear_fault test's was: the fake navigator's feedback overflowed)."""
    here = Path(__file__).parent
    for item in items:
        if item.get_closest_marker("ros") is not None:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1))
        elif here in item.path.parents:  # a test here that starts nodes another way (launch, processes): run alone
            item.add_marker(pytest.mark.serial)
