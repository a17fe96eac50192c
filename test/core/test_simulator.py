"""The scene-graph simulator: each rule, feasible and infeasible, with the feedback it gives."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.graph import Node, SceneGraph, graph_from_dict, graph_to_dict
from sayplan_core.graph.native_format import validate
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
    fails("goto(fridge)", "cannot goto(fridge): fridge is an asset; goto takes a room or pose")
    fails("pickup(fridge)", "cannot pickup(fridge): fridge is an asset; pickup takes an object")


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
    assert final.nodes["fridge"].states == ("closed",)


def test_toggle_rules() -> None:
    fails("turn_on(fridge)", "cannot turn_on(fridge): fridge does not afford turn_on")
    fails("turn_off(stove)", "cannot turn_off(stove): stove is off")
    final = ok("turn_on(stove)")
    assert final.nodes["stove"].states == ("on",)
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
    assert graph.parent("apple") == "bench" and graph.nodes["fridge"].states == ("closed",)


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
                "affordance": None,
                "description": "Unlock an asset.",
                "preconditions": [{"has_state": "locked"}, "in_agent_room"],
                "effects": [{"set_state": "unlocked"}],
            },
            "open": {
                "targets": ["asset"],
                "affordance": "open",
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
        action_set_from_dict(
            {"actions": {"fly": {"targets": ["room"], "affordance": None, "preconditions": ["levitate"]}}}
        )
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


# ------------------------------------------------------------------ issue 13: plans that verify always materialise
def office() -> SceneGraph:
    from sayplan_core.envs import load_env

    return load_env("office")


def test_putting_the_held_object_on_or_inside_itself_is_refused() -> None:
    for verb in ("put_on", "put_inside"):  # verified on main, then the final graph failed with a cycle
        result = verify_plan(office(), f"go_to(kitchen) > pick_up(orange) > {verb}(orange) > done", "lookplangraph")
        assert not result.success and result.failed_step == 2
        assert result.final_graph().held_object() == "orange"
    # an object that things can be put on still cannot take itself
    result = verify_plan(nesting_world(), "pick_up(tray) > put_on(tray)", "lookplangraph")
    assert result.feedback == (
        "cannot put_on(tray): tray is what the agent is holding; an object cannot go on or inside itself"
    )


def nesting_world() -> SceneGraph:
    """A tray (an object that things can be put on) carrying a cup, on a table."""
    nodes: list[dict[str, Any]] = [
        {"id": "room", "type": "room"},
        {"id": "table", "type": "asset", "affordances": ["put_on"]},
        {"id": "tray", "type": "object", "affordances": ["pick_up", "put_on"]},
        {"id": "cup", "type": "object", "affordances": ["pick_up", "put_on"]},
        {"id": "agent", "type": "agent", "attributes": {"location": "room"}},
    ]
    edges = [
        {"source": "table", "relation": "in", "target": "room"},
        {"source": "tray", "relation": "ontop_of", "target": "table"},
        {"source": "cup", "relation": "ontop_of", "target": "tray"},
    ]
    return graph_from_dict({"nodes": nodes, "edges": edges})


def test_putting_the_held_object_on_something_it_carries_is_refused() -> None:
    result = verify_plan(nesting_world(), "pick_up(tray) > put_on(cup)", "lookplangraph")
    assert not result.success and result.failed_step == 1
    assert result.feedback == "cannot put_on(cup): cup is on tray, which the agent is holding; put tray down first"
    # the other way round is fine: the cup goes onto the table, then the tray onto the cup
    final = verify_plan(nesting_world(), "pick_up(cup) > put_on(table) > pick_up(tray) > put_on(cup)", "lookplangraph")
    assert final.success, final.feedback
    assert final.final_graph().parent("tray") == "cup"


def office_with_a_packed_tray() -> SceneGraph:
    """The office with a tray on the kitchen bench carrying a lunchbox, and a plate inside the lunchbox: objects
    that afford placing, which no bundled object does."""
    graph = office()
    graph.add_node(Node("tray", "object", affordances=["pick_up", "put_on"]), "kitchen_bench", "ontop_of")
    graph.add_node(Node("lunchbox", "object", affordances=["pick_up", "put_inside", "contain"]), "tray", "ontop_of")
    graph.add_node(Node("plate", "object", affordances=["pick_up", "put_on"]), "lunchbox", "inside_of")
    graph.set_parent("orange", "plate", "ontop_of")
    return graph


@pytest.mark.parametrize(
    ("held", "place"),
    [
        ("tray", "put_inside(lunchbox)"),  # directly on the held object
        ("tray", "put_on(plate)"),  # two levels down
        ("lunchbox", "put_on(plate)"),  # inside the held object
        ("lunchbox", "put_inside(lunchbox)"),  # itself
    ],
)
def test_a_real_environment_refuses_placing_an_object_on_what_it_carries(held: str, place: str) -> None:
    graph = office_with_a_packed_tray()
    target = place[place.index("(") + 1 : -1]
    assert target == held or held in graph.ancestors(target)  # the oracle: the place goes wherever the held goes
    plan = parse_plan(f"go_to(kitchen) > pick_up({held}) > {place} > done")
    result = verify_plan(graph, plan, "lookplangraph")
    assert not result.success and result.failed_step == 2, result.feedback
    assert result.feedback.startswith(f"cannot {place}: ") and target in result.feedback
    assert f"{held}, which the agent is holding" in result.feedback or f"{held} is what the agent is holding" in (
        result.feedback
    )
    before = graph_to_dict(result.final_graph())
    assert result.final_graph().held_object() == held
    # the robot-side world runs the same steps and refuses the same one, leaving the world as it was
    world = SimulatedWorld(graph, "lookplangraph")
    for step in plan[:2]:
        assert world.execute(step.action, step.target).success
    assert not world.would_run(plan[2].action, plan[2].target)
    refused = world.execute(plan[2].action, plan[2].target)
    assert not refused.success and refused.message == result.feedback
    assert graph_to_dict(world.truth) == before
    validate(world.truth)


def test_a_real_environment_places_the_carrier_once_what_it_carried_is_put_down() -> None:
    graph = office_with_a_packed_tray()
    plan = parse_plan("go_to(kitchen) > pick_up(plate) > put_on(kitchen_bench) > pick_up(tray) > put_on(plate) > done")
    result = verify_plan(graph, plan, "lookplangraph")
    assert result.success, result.feedback
    final = result.final_graph()
    assert final.parent("tray") == "plate" and final.parent("lunchbox") == "tray"
    validate(final)
    world = SimulatedWorld(graph, "lookplangraph")
    for step in plan:
        assert world.execute(step.action, step.target).success, step
    assert graph_to_dict(world.truth) == graph_to_dict(final)
    # nesting made by the plan itself counts too: the plate put on the tray travels with it
    made = parse_plan("go_to(kitchen) > pick_up(plate) > put_on(tray) > pick_up(tray) > put_on(plate) > done")
    result = verify_plan(graph, made, "lookplangraph")
    assert result.failed_step == 4 and "plate is on tray, which the agent is holding" in result.feedback
    world = SimulatedWorld(graph, "lookplangraph")
    assert all(world.execute(step.action, step.target).success for step in made[:4])
    assert world.execute("put_on", "plate").message == result.feedback


# ------------------------------------------------------------------ affordances
def test_every_action_declares_the_affordance_its_target_needs() -> None:
    from importlib import resources

    import yaml

    from sayplan_core.sim.action_set import builtin_action_sets

    def raw(name: str) -> dict[str, Any]:
        text = resources.files("sayplan_core.sim").joinpath("action_sets", f"{name}.yaml").read_text()
        loaded: dict[str, Any] = yaml.safe_load(text)
        return loaded

    for name in builtin_action_sets():
        own = raw(name)
        inherited = raw(own["extends"])["actions"] if "extends" in own else {}
        for action, spec in own.get("actions", {}).items():  # an entry the base has changes only what it gives
            assert action in inherited or "affordance" in spec, f"{name}.{action} declares no affordance"
    with pytest.raises(ActionSetError, match="action 'grab': missing 'affordance'"):
        action_set_from_dict({"actions": {"grab": {"targets": ["object"]}}})


def test_lookplangraph_checks_affordances_with_feedback_naming_them() -> None:
    graph = world()
    graph.replace_node(replace(graph.nodes["apple"], affordances=()))
    result = verify_plan(graph, "pick_up(apple)", "lookplangraph")
    assert result.feedback == "cannot pick_up(apple): apple does not afford pick_up (it needs one of: pick_up, pickup)"
    # the stove affords no placing: nothing can be put on it, though it is in the agent's room
    result = verify_plan(world(), "pick_up(apple) > put_on(stove)", "lookplangraph")
    assert result.feedback == "cannot put_on(stove): stove does not afford put_on (it needs one of: put_on, release)"
    # the box opens, but nothing is put inside it unless it affords that
    result = verify_plan(world(), "go_to(bedroom) > pick_up(ring)", "lookplangraph")
    assert result.feedback == "cannot pick_up(ring): it is inside box, which is closed"
    result = verify_plan(world(), "go_to(bedroom) > open(box) > pick_up(ring) > put_inside(box)", "lookplangraph")
    assert result.failed_step == 3
    assert result.feedback == (
        "cannot put_inside(box): box does not afford put_inside (it needs one of: put_inside, release)"
    )


def test_sayplan_pickup_needs_the_pickup_affordance() -> None:
    graph = world()
    graph.replace_node(replace(graph.nodes["apple"], affordances=("eat",)))
    result = verify_plan(graph, "access(bench) > pickup(apple)")
    assert result.feedback == "cannot pickup(apple): apple does not afford pickup (it needs one of: pickup, pick_up)"


# ------------------------------------------------------------------ feedback in the words of the set in force
def test_feedback_uses_the_verbs_of_the_action_set_in_force() -> None:
    result = verify_plan(world(), "go_to(bedroom) > pick_up(apple)", "lookplangraph")
    assert result.feedback == (
        "cannot pick_up(apple): the agent is in bedroom, but apple is in kitchen; go_to(kitchen) first"
    )
    result = verify_plan(office(), "pick_up(orange)", "lookplangraph")
    assert result.feedback == (
        "cannot pick_up(orange): the agent is at pose7, in no room, but orange is in kitchen; go_to(kitchen) first"
    )


def test_a_set_without_a_navigation_verb_gives_no_hint() -> None:
    data = {
        "name": "arm_only",
        "actions": {
            "grab": {
                "targets": ["object"],
                "affordance": "pickup",
                "preconditions": ["hand_empty", "in_agent_room"],
                "effects": ["grasp"],
            },
        },
    }
    result = verify_plan(world(), "grab(mug)", action_set_from_dict(data))
    assert result.feedback == "cannot grab(mug): the agent is in kitchen, but mug is in bedroom"


# ------------------------------------------------------------------ repeated actions: a choice of the action set
def test_repeated_actions_are_errors_in_sayplan() -> None:
    assert load_action_set("sayplan").on_repeat == "error"
    fails("open(fridge) > open(fridge)", "cannot open(fridge): fridge is open, not closed", 1)
    fails("turn_on(stove) > turn_on(stove)", "cannot turn_on(stove): stove is on", 1)


def test_repeated_actions_are_noops_with_a_note_in_lookplangraph() -> None:
    assert load_action_set("lookplangraph").on_repeat == "noop"
    result = verify_plan(world(), "open(fridge) > open(fridge) > turn_on(stove) > turn_on(stove)", "lookplangraph")
    assert result.success, result.feedback
    assert result.notes == ["step 1 open(fridge): fridge is already open; nothing to do",
                            "step 3 turn_on(stove): stove is already on; nothing to do"]  # fmt: skip
    final = result.final_graph()
    assert final.nodes["fridge"].states == ("open",) and final.nodes["stove"].states == ("on",)
    # a no-op still needs everything else: the agent in the room, the affordance
    result = verify_plan(world(), "open(fridge) > go_to(bedroom) > open(fridge)", "lookplangraph")
    assert result.failed_step == 2 and "go_to(kitchen) first" in result.feedback


def test_repeat_policy_is_validated() -> None:
    with pytest.raises(ActionSetError, match="on_repeat must be error or noop"):
        action_set_from_dict({"name": "x", "on_repeat": "ignore", "actions": {}})


# ------------------------------------------------------------------ input types
def test_verify_plan_accepts_a_list_of_strings() -> None:
    result = verify_plan(world(), ["access(bench)", "pickup(apple)", "done"])
    assert result.success and result.steps_executed == 3


def test_verify_plan_refuses_other_types_with_a_type_error() -> None:
    with pytest.raises(TypeError, match="plan must be"):
        verify_plan(world(), 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="action_set must be"):
        verify_plan(world(), "done", 3)  # type: ignore[arg-type]


def test_a_user_set_that_forgets_the_guard_still_cannot_build_a_cycle() -> None:
    data = {
        "name": "careless",
        "actions": {
            "take": {"targets": ["object"], "affordance": None, "preconditions": ["hand_empty"], "effects": ["grasp"]},
            "drop_on": {"targets": ["object"], "affordance": None, "effects": [{"place_held": "ontop_of"}]},
        },
    }
    result = verify_plan(nesting_world(), "take(tray) > drop_on(cup)", action_set_from_dict(data))
    assert result.failed_step == 1 and "which the agent is holding" in result.feedback


def users_set(**extra: dict[str, Any]) -> Any:
    base: dict[str, Any] = {
        "goto": {"targets": ["room", "pose"], "affordance": None, "preconditions": ["reachable"],
                 "effects": ["move_agent"]},
        "done": {"targets": [], "affordance": None, "preconditions": [], "effects": ["finish"]},
    }  # fmt: skip
    return action_set_from_dict({"name": "users", "actions": {**base, **extra}})


@pytest.mark.parametrize(
    ("extra", "plan", "feedback"),
    [
        # a grasp that forgets to ask for an object: verified, then "'fridge' (asset) cannot be placed under robot"
        (
            {"grab": {"targets": ["asset", "object"], "affordance": None, "preconditions": [], "effects": ["grasp"]}},
            "goto(kitchen) > grab(fridge) > done",
            "cannot grab(fridge): fridge is an asset; only an object can be held",
        ),
        # a put-down that forgets asset_accessed: verify_plan raised a bare AssertionError
        (
            {
                "grab": {"targets": ["object"], "affordance": None, "preconditions": [], "effects": ["grasp"]},
                "drop": {"targets": ["object"], "affordance": None, "preconditions": [], "effects": ["place_held"]},
            },
            "goto(kitchen) > grab(carrot) > drop(carrot) > done",
            "cannot drop(carrot): no asset has been accessed to put it on",
        ),
        # SayPlan's release at an accessed node that the held object carries: verified, then a cycle
        (
            {
                "reach": {
                    "targets": ["asset", "object"],
                    "affordance": None,
                    "preconditions": [],
                    "effects": ["set_accessed"],
                },
                "grab": {"targets": ["object"], "affordance": None, "preconditions": [], "effects": ["grasp"]},
                "drop": {"targets": ["object"], "affordance": None, "preconditions": [], "effects": ["place_held"]},
            },
            "goto(kitchen) > grab(tray) > reach(plate) > drop(tray) > done",
            "cannot drop(tray): plate is carried by tray, which the agent is holding; put tray down first",
        ),
    ],
)
def test_a_users_set_that_forgets_a_precondition_still_verifies_only_what_materialises(
    extra: dict[str, Any], plan: str, feedback: str
) -> None:
    graph = office_with_a_packed_tray()
    result = verify_plan(graph, plan, users_set(**extra))
    assert not result.success and result.feedback == feedback
    validate(result.final_graph())


def test_feedback_for_a_nested_object_names_its_parent_and_the_asset_to_access() -> None:
    # it said "orange is on kitchen_bench" for an orange on a plate, in a lunchbox, on a tray on the bench
    result = verify_plan(office_with_a_packed_tray(), "goto(kitchen) > pickup(orange) > done")
    assert result.feedback == (
        "cannot pickup(orange): orange is on plate, at kitchen_bench, which has not been accessed; "
        "call access(kitchen_bench) first"
    )
