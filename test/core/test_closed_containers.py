"""Nothing acts through a closed container, in every bundled action set, at any nesting depth: `close` and
`look_inside` (like `open`, `pickup` and the rest) are refused on a node with a closed container anywhere above it;
a set that inserts missing opens (`auto_insert: [open]`, lookplangraph_auto) opens exactly those containers instead.

A cabinet in the agent's room holds a chain of 1-8 boxes, each in (inside_of) or on (ontop_of) the one before,
each open or closed at random. The oracle walks the chain as it was built: the target is blocked when some link
above it is `inside_of` a closed container, and the refusal names the nearest such container."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.graph.native_format import graph_from_dict
from sayplan_core.sim.action_set import builtin_action_sets, load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import check_step, verify_plan
from sayplan_core.sim.world_state import WorldState

VERBS = ("close", "look_inside")
SETS = builtin_action_sets()


@st.composite
def chains(draw: st.DrawFn) -> tuple[list[str], list[bool], int]:
    """(relation of box i to its parent, closed? of the cabinet and each box, the target box's index 1..depth)."""
    depth = draw(st.integers(1, 8))
    relations = draw(st.lists(st.sampled_from(["inside_of", "ontop_of"]), min_size=depth, max_size=depth))
    closed = draw(st.lists(st.booleans(), min_size=depth + 1, max_size=depth + 1))
    return relations, closed, draw(st.integers(1, depth))


def scene(relations: list[str], closed: list[bool]) -> Any:
    containers = ["cabinet", *(f"box{i}" for i in range(1, len(relations) + 1))]

    def node(i: str, kind: str, is_closed: bool) -> dict[str, Any]:
        return {
            "id": i,
            "type": kind,
            "affordances": ["open", "close"],
            "states": ["closed" if is_closed else "open"],
            "position": [0.0, 0.0, 0.0],
        }

    doc = {
        "nodes": [
            {"id": "floor1", "type": "floor"},
            {"id": "R", "type": "room", "position": [0.0, 0.0, 0.0]},
            node("cabinet", "asset", closed[0]),
            *(node(f"box{i}", "object", closed[i]) for i in range(1, len(relations) + 1)),
            {"id": "robot", "type": "agent", "attributes": {"location": "R"}},
        ],
        "edges": [
            {"source": "R", "relation": "in", "target": "floor1"},
            {"source": "cabinet", "relation": "in", "target": "R"},
            *(
                {"source": containers[i], "relation": relations[i - 1], "target": containers[i - 1]}
                for i in range(1, len(containers))
            ),
        ],
    }
    return graph_from_dict(doc), containers


def nearest_closed_container(relations: list[str], closed: list[bool], target: int) -> int | None:
    """The index of the nearest container above box `target` that it is (transitively) inside while closed."""
    for link in range(target, 0, -1):  # box `link` sits in/on container link - 1
        if relations[link - 1] == "inside_of" and closed[link - 1]:
            return link - 1
    return None


def closed_containers_around(relations: list[str], closed: list[bool], target: int) -> list[int]:
    """Every container box `target` is (transitively) inside while it is closed, outermost first."""
    return [link - 1 for link in range(1, target + 1) if relations[link - 1] == "inside_of" and closed[link - 1]]


@pytest.mark.parametrize("action_set", SETS)
@given(chain=chains())
def test_close_and_look_inside_are_refused_through_a_closed_container(
    action_set: str, chain: tuple[list[str], list[bool], int]
) -> None:
    relations, closed, target = chain
    graph, containers = scene(relations, closed)
    actions = load_action_set(action_set)
    blocker = nearest_closed_container(relations, closed, target)
    box = containers[target]
    verbs = [v for v in VERBS if v in actions.names()]
    assert "close" in verbs, f"{action_set} has no close"
    for verb in verbs:
        outcome = check_step(WorldState.from_graph(graph), PlanStep(verb, box), actions)
        where = f"{action_set}: {verb}({box}) with chain {relations}, closed {closed}"
        if blocker is not None:
            assert not outcome.ok, where
            assert outcome.failed == "container_open", where
            assert f"it is inside {containers[blocker]}, which is closed" in outcome.feedback, where
        elif not closed[target]:
            assert outcome.ok, f"{where}: {outcome.feedback}"
        else:
            assert outcome.failed != "container_open", where
        result = verify_plan(graph, [PlanStep(verb, box), PlanStep("done")], actions)
        if "open" in actions.auto_insert:  # the opens are inserted, outermost first, and the plan goes through
            opens = [containers[i] for i in closed_containers_around(relations, closed, target)]
            opens += [box] if verb == "look_inside" and closed[target] else []
            expected = [*(PlanStep("open", c) for c in opens), PlanStep(verb, box), PlanStep("done")]
            assert result.success and result.executed == expected, f"{where}: {result.feedback} {result.executed}"
            assert result.inserted == [(0, PlanStep("open", c)) for c in opens], where
            continue
        # the same through a whole plan: verification stops at that step for the same reason
        assert result.success == outcome.ok, f"{where}: {result.feedback}"
        if blocker is not None:
            assert not result.success and "which is closed" in result.feedback, where


@pytest.mark.parametrize("action_set", SETS)
def test_closing_what_is_open_inside_an_open_cabinet_is_allowed_and_opening_the_blocker_unblocks(
    action_set: str,
) -> None:
    """The refusal is about the closed cabinet, not about the target: open the cabinet and the close goes through."""
    graph, _ = scene(["inside_of", "inside_of"], [True, False, False])
    actions = load_action_set(action_set)
    opener = actions.verbs()["open"]
    refused = verify_plan(graph, [PlanStep("close", "box2"), PlanStep("done")], actions)
    if "open" in actions.auto_insert:  # a set that inserts the open does it here
        assert refused.success and refused.inserted == [(0, PlanStep(opener, "cabinet"))], refused.feedback
        return
    assert not refused.success and "inside cabinet, which is closed" in refused.feedback
    fixed = verify_plan(graph, [PlanStep(opener, "cabinet"), PlanStep("close", "box2"), PlanStep("done")], actions)
    assert fixed.success, fixed.feedback
