"""rosbag2 files written by a recorded run: readable by rosbags, and replayable to the same plan and graph."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from rosbags.rosbag2 import Reader
from transcripts import GOAL

from sayplan_core.graph import graph_to_dict, save
from sayplan_core.graph.updates import apply_update
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim import check_goals
from sayplan_interfaces.action import PlanTask
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.bag import project_typestore, read_messages
from sayplan_ros.conversions import msg_to_graph, msg_to_update
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recorded run of the main job (a separate process, its own domain)."""
    out = tmp_path_factory.mktemp("runs")
    env = {**__import__("os").environ, "ROS_DOMAIN_ID": "97"}
    done = subprocess.run(
        ["sayplan_demo", "--out", str(out), "--skill-delay", "0.01"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "summary: success" in done.stdout and "goal met" in done.stdout
    (run_dir,) = list(out.iterdir())
    return run_dir


def test_bag_is_readable_with_rosbags_typestore(demo_run: Path) -> None:
    typestore = project_typestore()
    topics: dict[str, int] = {}
    info = yaml.safe_load((demo_run / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["storage_identifier"] == "mcap" and info["version"] == 9
    with Reader(demo_run / "bag") as reader:
        for connection, _, raw in reader.messages():
            msg = typestore.deserialize_cdr(raw, connection.msgtype)
            topics[connection.topic] = topics.get(connection.topic, 0) + 1
            if connection.topic == "/scene_graph":
                assert msg.name == "office" and len(msg.nodes) == 238
    assert set(topics) == {
        "/scene_graph", "/scene_graph_updates", "/active_plan", "/plan_results", "/execution_events", "/skill_results"
    }  # fmt: skip
    assert topics["/plan_results"] == 2 and topics["/skill_results"] == 24


def final_graph_from_updates(messages: list[Any]) -> tuple[Any, list[int]]:
    """The first full graph patched with every recorded update, in version order."""
    graphs = [m for topic, _, m in messages if topic == "/scene_graph"]
    updates = {m.version: m for topic, _, m in messages if topic == "/scene_graph_updates"}
    graph, version = msg_to_graph(graphs[0]), graphs[0].version
    for v in sorted(updates):
        assert updates[v].base_version == version == v - 1, "updates must chain version by version"
        graph, version = apply_update(graph, msg_to_update(updates[v])), v
    return graph, sorted(updates)


def test_replaying_the_updates_reproduces_the_skill_results_and_meets_the_goal(demo_run: Path) -> None:
    messages = list(read_messages(demo_run / "bag"))
    graphs = [m for topic, _, m in messages if topic == "/scene_graph"]
    skills = [m for topic, _, m in messages if topic == "/skill_results"]
    from_updates, versions = final_graph_from_updates(messages)
    # every version once, none missing: one update per skill result that changed the graph
    assert versions == list(range(graphs[0].version + 1, graphs[0].version + len(skills) + 1))
    from_skills = msg_to_graph(graphs[0])
    for report in skills:
        from_skills = apply_update(from_skills, msg_to_update(report.outcome.graph_update))
    assert graph_to_dict(from_updates) == graph_to_dict(from_skills)
    assert check_goals(from_updates, [GOAL]).success
    failed = [SkillCode(r.outcome.error_code) for r in skills if not r.outcome.success]
    assert failed == [SkillCode.GRASP_FAILED]


def test_bag_fed_back_into_server_and_planner_gives_the_same_plan_and_graph(
    demo_run: Path, ros: Any, tmp_path: Path
) -> None:
    messages = list(read_messages(demo_run / "bag"))
    graphs = [m for topic, _, m in messages if topic == "/scene_graph"]
    skills = [m for topic, _, m in messages if topic == "/skill_results"]
    recorded_plans = [m for topic, _, m in messages if topic == "/plan_results"]
    start = tmp_path / "start.json"
    save(msg_to_graph(graphs[0]), start)
    server = ros.add(SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("env", value=str(start))]))
    planner = ros.add(
        PlannerNode(
            context=ros.context,
            parameter_overrides=[Parameter("replay_transcript", value=str(demo_run / "llm" / "plan_task_001.json"))],
        )
    )
    ros.wait_for(lambda: planner.graph_version > 0, what="planner to receive the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    handle_future = client.send_goal_async(PlanTask.Goal(instruction=recorded_plans[0].instruction))
    ros.wait_for(handle_future.done, what="goal accepted")
    result_future = handle_future.result().get_result_async()
    ros.wait_for(result_future.done, what="plan result")
    replayed = result_future.result().result
    recorded = recorded_plans[0].outcome
    assert [(s.action, s.target) for s in replayed.outcome.full_plan] == [
        (s.action, s.target) for s in recorded.full_plan
    ]
    assert list(replayed.outcome.feedback_history) == list(recorded.feedback_history)
    updates = ros.node("replayer").create_client(ApplyGraphUpdate, "apply_graph_update")
    for report in skills:
        assert ros.call(updates, ApplyGraphUpdate.Request(update=report.outcome.graph_update)).success
    assert graph_to_dict(server.graph) == graph_to_dict(final_graph_from_updates(messages)[0])
