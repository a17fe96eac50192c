"""sayplan_core.viz.robot: the robot's drawn pose and the path planner's route through the goto targets ahead."""

from __future__ import annotations

from sayplan_core.envs import load_env
from sayplan_core.graph.updates import GraphUpdate, apply_in_place
from sayplan_core.nav.path_planner import nav_edge_costs
from sayplan_core.viz.robot import RouteTracker
from sayplan_core.viz.scene import SceneEntities

PLAN = [("goto", "workshop"), ("pickup", "screwdriver"), ("goto", "kitchen"), ("done", "")]


def test_the_route_passes_every_goto_target_ahead_over_navigation_links() -> None:
    graph = load_env("office")
    scene = SceneEntities()
    scene.redraw(graph)
    route = RouteTracker().refresh(graph, PLAN, 0, scene.anchor, whole=True)
    assert graph.agent_id is not None
    assert route.pose == scene.anchor(graph.agent_id)  # where the scene draws the agent
    assert route.nodes[0] == graph.agent_location() and route.nodes[-1] == "kitchen" and "workshop" in route.nodes
    links = {frozenset((a, b)) for a, b, _ in nav_edge_costs(graph)}
    assert all(frozenset(pair) in links for pair in zip(route.nodes, route.nodes[1:], strict=False))
    assert route.points == tuple(scene.anchor(n) for n in route.nodes)
    # from the third step on, only the kitchen is ahead; a finished plan (-1) has nothing ahead
    tracker = RouteTracker()
    later = tracker.refresh(graph, PLAN, 2, scene.anchor, whole=False)
    assert later.nodes[-1] == "kitchen" and "workshop" not in later.nodes
    assert tracker.refresh(graph, PLAN, -1, scene.anchor, whole=False).nodes == ()


def test_a_removed_node_of_the_route_reroutes_it() -> None:
    graph = load_env("office")
    scene = SceneEntities()
    scene.redraw(graph)
    tracker = RouteTracker()
    first = tracker.refresh(graph, PLAN, 0, scene.anchor, whole=True)
    gone = next(n for n in first.nodes[1:-1] if graph.nodes[n].type == "pose" and n not in ("workshop", "kitchen"))
    update = GraphUpdate(remove=[gone])
    apply_in_place(graph, update)
    scene.update(graph, update)
    again = tracker.refresh(graph, PLAN, 0, scene.anchor, whole=False)
    assert gone not in again.nodes and again.nodes[-1] == "kitchen"
