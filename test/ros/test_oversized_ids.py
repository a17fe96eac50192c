"""An id no node can have (over limits.MAX_ID_CHARS) is refused by every query service in one bounded line, and
never echoed whole: a 50 MB `PlanPath.start`, `GetSceneGraph.node_ids` item or plan-step target came back 50 MB
long in the refusal ("node 'kkk...' does not exist"), after a closest-name search over its whole length (hostile
review). The services go on answering."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from sayplan_core.graph import limits
from sayplan_interfaces.msg import PlanStep
from sayplan_interfaces.srv import GetSceneGraph, PlanPath, VerifyPlan
from sayplan_ros.path_planner_node import PathPlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros
HUGE = "k" * 5_000_000
BOUNDED = 1_000  # characters a refusal may take


def test_an_oversized_id_is_refused_in_one_bounded_line_by_every_query_service(ros: Any) -> None:
    ros.add(SceneGraphServer(context=ros.context))
    planner = ros.add(PathPlannerNode(context=ros.context))
    ros.wait_for(lambda: planner.version > 0, what="the path planner's graph")
    node = ros.node("peer")
    paths = node.create_client(PlanPath, "plan_path")
    graphs = node.create_client(GetSceneGraph, "get_scene_graph")
    verify = node.create_client(VerifyPlan, "verify_plan")
    answers = [
        ros.call(paths, PlanPath.Request(start=HUGE, goal="kitchen"), 60.0).message,
        ros.call(paths, PlanPath.Request(start="kitchen", goal=HUGE), 60.0).message,
        ros.call(graphs, GetSceneGraph.Request(node_ids=["kitchen", HUGE]), 60.0).message,
        ros.call(verify, VerifyPlan.Request(plan=[PlanStep(action="goto", target=HUGE)]), 60.0).feedback,
    ]
    for message in answers:
        assert f"over the limit {limits.MAX_ID_CHARS}" in message and len(message) < BOUNDED, message[:300]
    assert ros.call(paths, PlanPath.Request(start="kitchen", goal="nikos_office"), 60.0).success
    assert ros.call(graphs, GetSceneGraph.Request(node_ids=["kitchen"]), 60.0).success
