"""The scene-graph simulator: each rule, feasible and infeasible, with the feedback it gives."""

from __future__ import annotations

from typing import Any

import pytest

from sayplan_core.graph import SceneGraph, graph_from_dict
from sayplan_core.sim import load_action_set, parse_plan, verify_plan
from sayplan_core.sim.action_set import ActionSetError, action_set_from_dict
from sayplan_core.sim.plan import PlanFormatError, PlanStep


def world() -> SceneGraph:
    """Two rooms joined by a corridor pose, plus an unreachable shed."""
    nodes: list[dict[str, Any]] = [
        {"id": "floor1", "type": "floor"},
        {"id": "kitchen", "type": "room", "position": [0, 0]},
        {"id": "bedroom", "type": "room", "position": [10, 0]},
        {"id": "shed", "type": "room", "position": [50, 0]},
        {"id": "pose1", "type": "pose", "position": [5, 0]},
        {"id": "fridge", "type": "asset", "states": ["closed"], "affordances": ["open", "close", "release"]},
        {"id": "bench", "type": "asset", "affordances": ["release"]},
        {"id": "stove", "type": "asset", "states": ["off"], "affordances": ["turn_on", "turn_off"]},
        {"id": "safe", "type": "asset", "states": ["closed", "locked"], "affordances": ["open", "close"]},
        {"id": "wardrobe", "type": "asset", "states": ["closed"], "affordances": ["open", "close", "release"]},
        {"id": "bed", "type": "asset", "affordances": ["release"]},
        {"id": "bin", "type": "asset", "affordances": ["release"], "attributes": {"container": True}},
        {"id": "milk", "type": "object", "affordances": ["pickup"]},
        {"id": "apple", "type": "object", "affordances": ["pickup"]},
        {"id": "mug", "type": "object", "affordances": ["pickup"]},
        {"id": "box", "type": "object", "states": ["closed"], "affordances": ["pickup", "open", "close"]},
        {"id": "ring", "type": "object", "affordances": ["pickup"]},
        {"id": "agent", "type": "agent", "attributes": {"location": "kitchen"}},
    ]
    edges: list[dict[str, Any]] = [
        *({"source": r, "relation": "in", "target": "floor1"} for r in ("kitchen", "bedroom", "shed", "pose1")),
        *({"source": a, "relation": "in", "target": "kitchen"} for a in ("fridge", "bench", "stove", "safe", "bin")),
        *({"source": a, "relation": "in", "target": "bedroom"} for a in ("wardrobe", "bed")),
        {"source": "milk", "relation": "inside_of", "target": "fridge"},
        {"source": "apple", "relation": "ontop_of", "target": "bench"},
        {"source": "mug", "relation": "inside_of", "target": "wardrobe"},
        {"source": "box", "relation": "ontop_of", "target": "bed"},
        {"source": "ring", "relation": "inside_of", "target": "box"},
        {"source": "kitchen", "relation": "connected_to", "target": "pose1"},
        {"source": "pose1", "relation": "connected_to", "target": "bedroom"},
    ]
    return graph_from_dict({"name": "sim", "nodes": nodes, "edges": edges})


def fails(plan: str, feedback: str, step: int | None = None, action_set: str = "sayplan", **kw: Any) -> None:
    result = verify_plan(world(), plan, action_set, **kw)
    assert not result.success, f"expected failure, got {result.feedback}"
    assert result.feedback == feedback
    if step is not None:
        assert result.failed_step == step


def ok(plan: str, action_set: str = "sayplan", **kw: Any) -> SceneGraph:
    result = verify_plan(world(), plan, action_set, **kw)
    assert result.success, result.feedback
    return result.final_graph()


# ------------------------------------------------------------------ existence and types
def test_unknown_node_suggests_the_closest() -> None:
    fails("goto(kichen)", "cannot goto(kichen): node 'kichen' does not exist; did you mean 'kitchen'?", 0)


def test_unknown_action_lists_the_available_ones() -> None:
    result = verify_plan(world(), "fly(kitchen)")
    assert result.feedback.startswith("cannot fly(kitchen): unknown action 'fly' (available: goto, access, pickup")


def test_wrong_target_type() -> None:
    fails("goto(fridge)", "cannot goto(fridge): fridge is a asset; goto takes a room or pose")
    fails("pickup(fridge)", "cannot pickup(fridge): fridge is a asset; pickup takes a object")


def test_missing_argument_and_empty_plan() -> None:
    fails("goto()", "cannot goto(): it needs a room or pose node")
    assert verify_plan(world(), []).feedback == "the plan is empty"


# ------------------------------------------------------------------ navigation
def test_goto_reachable_and_unreachable() -> None:
    final = ok("goto(bedroom)")
    assert final.agent_location() == "bedroom"
    fails("goto(shed)", "cannot goto(shed): shed cannot be reached from kitchen: no path joins them")


def test_strict_navigation_needs_adjacent_hops() -> None:
    fails(
        "goto(bedroom)",
        "cannot goto(bedroom): bedroom is not adjacent to the agent's location kitchen; "
        "go through the pose nodes between them",
        strict_navigation=True,
    )
    ok("goto(pose1) > goto(bedroom)", strict_navigation=True)


# ------------------------------------------------------------------ hand and access
def test_pickup_needs_access_first() -> None:
    fails(
        "pickup(apple)",
        "cannot pickup(apple): apple is on bench, which has not been accessed; call access(bench) first",
    )
    final = ok("access(bench) > pickup(apple)")
    assert final.held_object() == "apple"


def test_pickup_only_in_agent_room() -> None:
    fails(
        "access(wardrobe)",
        "cannot access(wardrobe): the agent is in kitchen, but wardrobe is in bedroom; goto(bedroom) first",
    )


def test_closed_container_blocks_its_contents() -> None:
    fails("access(fridge) > pickup(milk)", "cannot pickup(milk): it is inside fridge, which is closed", 1)
    ok("access(fridge) > open(fridge) > pickup(milk)")


def test_nested_containers_block_at_any_depth() -> None:
    fails(
        "goto(bedroom) > access(bed) > pickup(ring)",
        "cannot pickup(ring): it is inside box, which is closed",
        2,
    )
    ok("goto(bedroom) > access(bed) > open(box) > pickup(ring)")


def test_one_object_in_hand() -> None:
    fails(
        "access(bench) > pickup(apple) > open(fridge) > access(fridge) > pickup(milk)",
        "cannot pickup(milk): the agent is already holding apple; it can hold one object at a time",
        4,
    )


def test_release_rules() -> None:
    fails("release(apple)", "cannot release(apple): the agent is holding nothing")
    fails(
        "access(bench) > pickup(apple) > release(milk)",
        "cannot release(milk): the agent is holding apple, not milk",
    )
    fails(
        "access(bench) > pickup(apple) > goto(bedroom) > release(apple)",
        "cannot release(apple): no asset has been accessed; call access(<asset>) at the agent's location first",
    )


def test_release_places_inside_open_containers_and_on_top_otherwise() -> None:
    final = ok("access(bench) > pickup(apple) > open(fridge) > access(fridge) > release(apple)")
    assert (final.parent("apple"), final.relation("apple")) == ("fridge", "inside_of")
    final = ok("access(bench) > pickup(apple) > access(fridge) > release(apple)")
    assert (final.parent("apple"), final.relation("apple")) == ("fridge", "ontop_of")
    final = ok("access(bench) > pickup(apple) > access(bin) > release(apple)")
    assert final.relation("apple") == "inside_of"


# ------------------------------------------------------------------ states and affordances
def test_open_close_need_the_affordance_and_the_right_state() -> None:
    fails("open(bench)", "cannot open(bench): bench does not afford open")
    fails("close(fridge)", "cannot close(fridge): fridge is closed, not open")
    fails("open(fridge) > open(fridge)", "cannot open(fridge): fridge is open, not closed", 1)
    fails("open(safe)", "cannot open(safe): safe is locked")
    final = ok("open(fridge) > close(fridge)")
    assert final.nodes["fridge"].states == ["closed"]


def test_toggle_rules() -> None:
    fails("turn_on(fridge)", "cannot turn_on(fridge): fridge does not afford turn_on")
    fails("turn_off(stove)", "cannot turn_off(stove): stove is off")
    final = ok("turn_on(stove)")
    assert final.nodes["stove"].states == ["on"]
    fails(
        "goto(bedroom) > turn_on(stove)",
        "cannot turn_on(stove): the agent is in bedroom, but stove is in kitchen; goto(kitchen) first",
    )


def test_done_stops_the_simulation() -> None:
    result = verify_plan(world(), "done > goto(shed)")
    assert result.success and result.finished and result.steps_executed == 1


def test_graph_is_never_modified() -> None:
    graph = world()
    verify_plan(graph, "access(bench) > pickup(apple) > open(fridge)")
    assert graph.parent("apple") == "bench" and graph.nodes["fridge"].states == ["closed"]


# ------------------------------------------------------------------ LookPlanGraph action set
def test_lookplangraph_actions() -> None:
    final = ok("pick_up(apple) > open(fridge) > put_inside(fridge)", "lookplangraph")
    assert final.relation("apple") == "inside_of" and final.parent("apple") == "fridge"
    fails("put_inside(fridge)", "cannot put_inside(fridge): the agent is holding nothing", action_set="lookplangraph")
    fails(
        "pick_up(apple) > put_inside(fridge)",
        "cannot put_inside(fridge): fridge is closed; open(fridge) first",
        action_set="lookplangraph",
    )
    fails(
        "pick_up(apple) > put_inside(bench)",
        "cannot put_inside(bench): bench is not a container",
        action_set="lookplangraph",
    )
    fails("go_to(pose1)", "cannot go_to(pose1): pose1 is a pose; go_to takes a room", action_set="lookplangraph")
    fails(
        "look_inside(fridge)",
        "cannot look_inside(fridge): fridge is closed; open(fridge) first",
        action_set="lookplangraph",
    )


def test_look_actions_call_the_reveal_hook() -> None:
    seen: list[tuple[str, str]] = []

    def hook(state: Any, asset: str, relation: str) -> list[str]:
        seen.append((asset, relation))
        return ["apple"]

    result = verify_plan(
        world(), "look_on(bench) > open(fridge) > look_inside(fridge)", "lookplangraph", reveal_hook=hook
    )
    assert result.success
    assert seen == [("bench", "ontop_of"), ("fridge", "inside_of")]
    assert result.state is not None and result.state.revealed == ["apple", "apple"]


# ------------------------------------------------------------------ declarative action sets
def test_a_new_skill_is_a_data_change() -> None:
    data = {
        "name": "with_unlock",
        "actions": {
            "unlock": {
                "targets": ["asset"],
                "description": "Unlock an asset.",
                "preconditions": [{"has_state": "locked"}, "in_agent_room"],
                "effects": [{"set_state": "unlocked"}],
            },
            "open": {
                "targets": ["asset"],
                "preconditions": [{"has_affordance": "open"}, {"lacks_state": "locked"}, {"has_state": "closed"}],
                "effects": [{"set_state": "open"}],
            },
        },
    }
    actions = action_set_from_dict(data)
    assert verify_plan(world(), "open(safe)", actions).feedback == "cannot open(safe): safe is locked"
    result = verify_plan(world(), "unlock(safe) > open(safe)", actions)
    assert result.success
    assert sorted(result.final_graph().nodes["safe"].states) == ["open", "unlocked"]


def test_bad_action_set_names_the_action() -> None:
    with pytest.raises(ActionSetError, match="action 'fly': unknown 'levitate'"):
        action_set_from_dict({"actions": {"fly": {"targets": ["room"], "preconditions": ["levitate"]}}})
    with pytest.raises(ActionSetError, match="unknown action set 'nope'"):
        load_action_set("nope")


def test_prompt_lines_describe_every_action() -> None:
    lines = load_action_set("sayplan").prompt_lines()
    assert lines[0].startswith("goto(<room|pose>): Move the agent")
    assert len(lines) == 9


# ------------------------------------------------------------------ plan parsing
def test_plan_parsing_forms() -> None:
    expected = [PlanStep("goto", "kitchen"), PlanStep("pickup", "mug"), PlanStep("done")]
    assert parse_plan("goto(kitchen) > pickup(mug) > done") == expected
    assert parse_plan('["goto(kitchen)", "pickup(mug)", "done()"]') == expected
    assert parse_plan({"plan": [{"action": "goto", "target": "kitchen"}, ["pickup", "mug"], "done"]}) == expected
    assert parse_plan([{"function_name": "goto", "function_target": "kitchen"}])[0] == expected[0]
    with pytest.raises(PlanFormatError, match="step 1"):
        parse_plan("goto(kitchen) > pick up the mug")
    with pytest.raises(PlanFormatError, match="several arguments"):
        parse_plan("put(mug, table)")
