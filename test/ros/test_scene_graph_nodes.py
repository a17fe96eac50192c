"""scene_graph_server and path_planner as real rclpy nodes, talked to over DDS."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.parameter import Parameter

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_to_dict
from sayplan_core.graph.model import GraphError
from sayplan_interfaces.msg import GraphUpdate, PlanStep, SceneGraphNode
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import ApplyGraphUpdate, GetSceneGraph, PlanPath, VerifyPlan
from sayplan_ros.conversions import msg_to_graph, node_to_msg
from sayplan_ros.path_planner_node import PathPlannerNode
from sayplan_ros.qos import GRAPH_UPDATES_QOS, LATCHED_STATE_QOS
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


def start_server(ros: Any, env: str = "office") -> SceneGraphServer:
    server = SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("env", value=env)])
    return ros.add(server)


def latest_graph(ros: Any) -> list[SceneGraphMsg]:
    received: list[SceneGraphMsg] = []
    node = ros.node("graph_listener")
    node.create_subscription(SceneGraphMsg, "scene_graph", received.append, LATCHED_STATE_QOS)
    return received


def move_orange_into(target: str, relation: str = "inside_of") -> GraphUpdate:
    graph = load_env("office")
    msg = node_to_msg(graph.nodes["orange"], graph.parent("orange"), graph.relation("orange"))
    msg.parent, msg.relation = target, relation
    update = GraphUpdate(source="test")
    update.upsert = [msg]
    return update


def test_late_subscriber_gets_the_latched_graph(ros: Any) -> None:
    start_server(ros)
    received = latest_graph(ros)  # subscribes after the server published
    ros.wait_for(lambda: bool(received), what="latched scene_graph")
    msg = received[-1]
    assert msg.version == 1 and msg.header.frame_id == "map"
    graph = msg_to_graph(msg)
    assert len(graph) == len(load_env("office"))
    assert graph.parent("orange") == "kitchen_bench"


def test_get_subgraph_and_unknown_node(ros: Any) -> None:
    start_server(ros)
    client = ros.node("client").create_client(GetSceneGraph, "get_scene_graph")
    answer = ros.call(client, GetSceneGraph.Request(node_ids=["orange"]))
    assert answer.success
    assert sorted(n.id for n in answer.graph.nodes) == ["floor1", "kitchen", "kitchen_bench", "orange"]
    answer = ros.call(client, GetSceneGraph.Request(node_ids=["ornage"]))
    assert not answer.success and "did you mean 'orange'" in answer.message


def test_update_bumps_the_version_and_is_published_with_it(ros: Any) -> None:
    start_server(ros)
    updates: list[GraphUpdate] = []
    ros.node("update_listener").create_subscription(
        GraphUpdate, "scene_graph_updates", updates.append, GRAPH_UPDATES_QOS
    )
    client = ros.node("client").create_client(ApplyGraphUpdate, "apply_graph_update")
    answer = ros.call(client, ApplyGraphUpdate.Request(update=move_orange_into("fridge")))
    assert answer.success and answer.version == 2, answer.message
    ros.wait_for(lambda: bool(updates), what="the update on scene_graph_updates")
    assert (updates[0].base_version, updates[0].version) == (1, 2)
    assert [(n.id, n.parent) for n in updates[0].upsert] == [("orange", "fridge")]


def test_full_graph_is_republished_every_n_updates(ros: Any) -> None:
    server = ros.add(
        SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("full_graph_every", value=2)])
    )
    received = latest_graph(ros)
    client = ros.node("client").create_client(ApplyGraphUpdate, "apply_graph_update")
    for target in ("fridge", "kitchen_bench", "fridge"):
        assert ros.call(client, ApplyGraphUpdate.Request(update=move_orange_into(target))).success
    ros.wait_for(lambda: any(m.version == 4 for m in received), what="the full graph of version 4")
    assert server.version == 4 and {m.version for m in received} <= {1, 2, 4}  # never version 3
    assert graph_to_dict(msg_to_graph(next(m for m in received if m.version == 4))) == graph_to_dict(server.graph)


def test_followers_stay_in_sync_through_updates_and_fetch_after_a_missed_one(ros: Any) -> None:
    """A follower that joins late sees only the last update (history 1): it fetches the full graph once,
    then keeps up through updates alone."""
    overrides = [Parameter("full_graph_every", value=0), Parameter("update_history", value=1)]
    server = ros.add(SceneGraphServer(context=ros.context, parameter_overrides=overrides))
    client = ros.node("client").create_client(ApplyGraphUpdate, "apply_graph_update")
    for target in ("fridge", "kitchen_bench", "fridge"):
        assert ros.call(client, ApplyGraphUpdate.Request(update=move_orange_into(target))).success
    follower = ros.add(PathPlannerNode(context=ros.context))
    ros.wait_for(lambda: follower.version == 4, what="the late follower to catch up to version 4")
    assert follower.follower.stats()["fetches"] == 1 and follower.follower.problem() == ""
    for target in ("kitchen_bench", "fridge", "kitchen_bench"):
        assert ros.call(client, ApplyGraphUpdate.Request(update=move_orange_into(target))).success
    ros.wait_for(lambda: follower.version == 7, what="the follower to patch its way to version 7")
    stats = follower.follower.stats()
    assert stats["patched"] == 3 and stats["fetches"] == 1, stats
    graph, _ = follower.follower.latest()
    assert graph is not None and graph_to_dict(graph) == graph_to_dict(server.graph)


def test_malformed_update_is_refused_and_graph_kept(ros: Any) -> None:
    server = start_server(ros)
    client = ros.node("client").create_client(ApplyGraphUpdate, "apply_graph_update")
    bad_parent = move_orange_into("unicorn_shelf")
    answer = ros.call(client, ApplyGraphUpdate.Request(update=bad_parent))
    assert not answer.success and answer.version == 1
    assert "'unicorn_shelf', which does not exist" in answer.message
    wrong_type = GraphUpdate(source="test")
    wrong_type.upsert = [SceneGraphNode(id="mystery", type="spirit")]
    answer = ros.call(client, ApplyGraphUpdate.Request(update=wrong_type))
    assert not answer.success and "unknown type 'spirit'" in answer.message
    stale = move_orange_into("fridge")
    stale.base_version = 7
    answer = ros.call(client, ApplyGraphUpdate.Request(update=stale))
    assert not answer.success and "stale update" in answer.message
    assert server.version == 1 and server.graph.parent("orange") == "kitchen_bench"


def test_verify_plan_service(ros: Any) -> None:
    start_server(ros)
    client = ros.node("client").create_client(VerifyPlan, "verify_plan")
    plan = [PlanStep(action="goto", target="kitchen"), PlanStep(action="pickup", target="carrot")]
    answer = ros.call(client, VerifyPlan.Request(plan=plan))
    assert not answer.success and answer.failed_step == 1
    assert answer.feedback == (
        "cannot pickup(carrot): carrot is in fridge, which has not been accessed; call access(fridge) first"
    )
    answer = ros.call(client, VerifyPlan.Request(plan=plan[:1], action_set="nope"))
    assert not answer.success and "unknown action set" in answer.feedback


def test_verify_plan_service_reports_the_steps_an_auto_set_inserted(ros: Any) -> None:
    """A verified answer under lookplangraph_auto says which steps it added (docs/concepts/simulator_differences.md)."""
    start_server(ros)
    client = ros.node("client").create_client(VerifyPlan, "verify_plan")
    plan = [PlanStep(action="pick_up", target="chicken_kebab"), PlanStep(action="done")]
    answer = ros.call(client, VerifyPlan.Request(plan=plan, action_set="lookplangraph_auto"))
    assert answer.success and answer.feedback == (
        "plan verified; inserted: go_to(kitchen) before step 0 pick_up(chicken_kebab); "
        "open(fridge) before step 0 pick_up(chicken_kebab)"
    )
    answer = ros.call(client, VerifyPlan.Request(plan=plan, action_set="lookplangraph"))
    assert not answer.success and answer.feedback.endswith("go_to(kitchen) first")


@pytest.mark.parametrize("name", ["../../etc/passwd.yaml", "/etc/hostname", "x.yaml", "config/sayplan.yaml"])
def test_verify_plan_never_reads_a_file_a_message_names(ros: Any, tmp_path: Any, name: str) -> None:
    """A request may name only a registered action set; paths are refused without touching the file system."""
    (tmp_path / "x.yaml").mkdir()  # a directory named like a YAML file once killed the process
    start_server(ros)
    client = ros.node("client").create_client(VerifyPlan, "verify_plan")
    answer = ros.call(client, VerifyPlan.Request(plan=[PlanStep(action="goto", target="kitchen")], action_set=name))
    assert not answer.success and answer.feedback.startswith("unknown action set")
    assert "registered: lookplangraph, lookplangraph_auto, sayplan" in answer.feedback
    # the node is still there
    answer = ros.call(client, VerifyPlan.Request(plan=[PlanStep(action="goto", target="kitchen")]))
    assert answer.success


def test_path_planner_follows_the_graph(ros: Any) -> None:
    start_server(ros)
    planner = ros.add(PathPlannerNode(context=ros.context))
    ros.wait_for(lambda: planner.version == 1, what="path planner to receive the graph")
    client = ros.node("client").create_client(PlanPath, "plan_path")
    answer = ros.call(client, PlanPath.Request(goal="cafeteria"))
    assert answer.success, answer.message
    assert answer.node_ids[0] == "pose7" and answer.node_ids[-1] == "cafeteria"
    assert len(answer.positions) == len(answer.node_ids) and answer.cost > 30
    answer = ros.call(client, PlanPath.Request(start="kitchen", goal="fridge"))
    assert not answer.success and "is an asset" in answer.message

    updates = ros.node("updater").create_client(ApplyGraphUpdate, "apply_graph_update")
    cut = GraphUpdate(source="test")
    from sayplan_interfaces.msg import SceneGraphEdge

    cut.disconnect = [SceneGraphEdge(source="cafeteria", target="pose13")]
    assert ros.call(updates, ApplyGraphUpdate.Request(update=cut)).success
    ros.wait_for(lambda: planner.version == 2, what="path planner to receive version 2")
    answer = ros.call(client, PlanPath.Request(goal="cafeteria"))
    assert not answer.success and "unreachable" in answer.message


def test_bad_parameters_fail_clearly(ros: Any) -> None:
    with pytest.raises(GraphError, match="unknown environment 'atlantis'"):
        SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("env", value="atlantis")])
    with pytest.raises(ValueError, match="method must be one of dijkstra, astar"):
        PathPlannerNode(context=ros.context, parameter_overrides=[Parameter("method", value="bfs")])


def test_every_config_parameter_is_declared(ros: Any) -> None:
    import yaml
    from test_launch import CONFIG_FILES

    from sayplan_ros.executor_node import ExecutorNode
    from sayplan_ros.planner_node import PlannerNode
    from sayplan_ros.sim_skill_server import SimSkillServer

    nodes = {
        "scene_graph_server": start_server(ros),
        "path_planner": ros.add(PathPlannerNode(context=ros.context)),
        "planner": ros.add(PlannerNode(context=ros.context), bring_up=False),  # declared before configure
        "executor": ros.add(ExecutorNode(context=ros.context)),
        "sim_skill_server": ros.add(SimSkillServer(context=ros.context)),
    }
    for path in CONFIG_FILES:
        for name, body in yaml.safe_load(path.read_text()).items():
            if name in ("spot_skill_server", "franka_omron_skill_server"):
                continue  # needs the Spot SDK and a robot: test/core/test_spot.py checks its file against its table
            for key in flat(body["ros__parameters"]):  # nested sections are dotted names (a planner's options)
                assert nodes[name].has_parameter(key), f"{path.name}: {name} does not declare '{key}'"
                assert nodes[name].describe_parameter(key).description, f"{name}.{key} has no description"


def flat(section: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A YAML section's parameters by their ROS names: `embodiedrag: {retrieval_top_k: 3}` is
    `embodiedrag.retrieval_top_k`, as rclpy reads a parameters file."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        out.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out
