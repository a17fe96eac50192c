"""Starting the Spot skill server (and the nodes it needs) against a running FakeSpot, for the ROS tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from rclpy.action import ActionClient
from rclpy.parameter import Parameter

from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep

from . import FakeSpot
from .office import office_site


def login(monkeypatch: pytest.MonkeyPatch, spot: FakeSpot) -> None:
    """The robot login goes in the environment, as a user would set it."""
    monkeypatch.setenv("BOSDYN_CLIENT_USERNAME", spot.world.username)
    monkeypatch.setenv("BOSDYN_CLIENT_PASSWORD", spot.world.password)


def spot_parameters(spot: FakeSpot, site: Path | None, **extra: Any) -> list[Parameter]:
    values: dict[str, Any] = {
        "hostname": "127.0.0.1",
        "port": spot.port,
        "ca_cert_file": str(spot.ca_path),
        "site_file": str(site) if site else "",
        "feedback_period_s": 0.01,
        "lease_check_in_s": 0.1,
        "handle_pull_s": 0.15,
        "connect_timeout_s": 10.0,
    }
    values.update(extra)
    return [Parameter(k, value=v) for k, v in values.items()]


@contextmanager
def spot_skill_server(
    ros: Any,
    spot: FakeSpot,
    tmp_path: Path,
    site: Path | None = None,
    graph: bool = True,
    bring_up: bool = True,
    **extra: Any,
) -> Iterator[Any]:
    """spot_skill_server brought up on the fake (configure: the session; activate: the lease), and the robot
    stood up by the operator's `~/stand_up` (activation never stands it); with a scene_graph_server with the
    office. With `bring_up` False the node spins unconfigured (the test drives its transitions). Stops the node
    (sit, power off, lease returned) while the fake still runs."""
    from sayplan_ros.scene_graph_server import SceneGraphServer
    from sayplan_spot.skill_server import SpotSkillServer

    if graph:
        ros.add(SceneGraphServer(context=ros.context))
    site = site if site is not None else office_site(tmp_path / "site.yaml")
    server = SpotSkillServer(context=ros.context, parameter_overrides=spot_parameters(spot, site, **extra))
    try:
        ros.add(server, bring_up=bring_up)
        if bring_up:
            stand_up(ros, server)  # a robot that cannot stand says so to the test (its motors stay off)
        yield server
    finally:
        stop_node(ros, server)


def stop_node(ros: Any, node: Any) -> None:
    """Destroy one node of the harness now (the fake must outlive the Spot node's shut-down)."""
    ros.executor.remove_node(node)
    node.destroy_node()
    if node in ros._nodes:
        ros._nodes.remove(node)


def run_skill(ros: Any, client: ActionClient, skill: str, target: str = "", timeout: float = 30.0, **kw: Any) -> Any:
    """Send one execute_skill goal; returns (status, outcome)."""
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action=skill, target=target), **kw))
    ros.wait_for(future.done, what="goal acceptance")
    handle = future.result()
    assert handle.accepted
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=timeout, what=f"{skill}({target}) result")
    wrapped = result.result()
    return wrapped.status, wrapped.result.outcome


def wait_until(predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def stand_up(ros: Any, server: Any, timeout: float = 15.0) -> Any:
    """Call the node's ~/stand_up (std_srvs/Trigger) as an operator would; returns the Trigger response."""
    from std_srvs.srv import Trigger

    client = ros.node(f"operator_stand_{len(ros._nodes)}").create_client(Trigger, server.stand_up_service)
    return ros.call(client, Trigger.Request(), timeout)
