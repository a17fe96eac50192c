"""Floor-level collapse (issue 28): expand/contract against a brute-force oracle, and when a view starts at floors."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph import GraphError
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.views import collapse, floors_first


@cache
def building() -> SceneGraph:
    """Three floors of three rooms, two assets of one object each: small enough to enumerate by hand."""
    return generate_building(BuildingSpec(floors=3, rooms_per_floor=3, assets_per_room=2, objects_per_asset=1))


# ------------------------------------------------------------------ the oracle, written from the definition
def chain_up(graph: SceneGraph, node: str) -> list[str]:
    """The node's ancestors, nearest first, by walking parent links one at a time."""
    out = []
    parent = graph.parent(node)
    while parent is not None:
        out.append(parent)
        parent = graph.parent(parent)
    return out


def oracle_visible(graph: SceneGraph, expanded: set[str], top_only: bool, with_poses: bool) -> set[str]:
    """A node is visible if it is of a level always shown, or held, or if some visible expanded ancestor shows it:
    a floor (or the building) shows its direct rooms (and poses when kept), any other node everything below it
    but poses (unless kept). Computed for every node separately, by recursion on that definition."""
    shown = {"building", "floor", "agent"} | (set() if top_only else {"room"})
    if with_poses and not top_only:
        shown.add("pose")
    memo: dict[str, bool] = {}

    def visible(node: str) -> bool:
        if node not in memo:
            kind = graph.nodes[node].type
            memo[node] = (
                kind in shown
                or node == graph.held_object()
                or any(reveals(up, node, index) and visible(up) for index, up in enumerate(chain_up(graph, node)))
            )
        return memo[node]

    def reveals(up: str, node: str, distance: int) -> bool:
        if up not in expanded:
            return False
        kind = graph.nodes[node].type
        if graph.nodes[up].type in ("building", "floor"):
            return distance == 0 and (kind == "room" or (with_poses and kind == "pose"))
        return with_poses or kind != "pose"

    return {n for n in graph.nodes if visible(n)}


class OracleView:
    """What expand and contract must do, stated as rules on a set of expanded nodes."""

    def __init__(self, graph: SceneGraph, top_only: bool, with_poses: bool) -> None:
        self.graph, self.top_only, self.with_poses = graph, top_only, with_poses
        self.expanded: set[str] = set()
        self.memory: list[str] = []

    def visible(self) -> set[str]:
        return oracle_visible(self.graph, self.expanded, self.top_only, self.with_poses)

    def expand(self, node: str) -> bool:
        """False: the view must refuse (not expandable, hidden, or already expanded)."""
        kind = self.graph.nodes[node].type
        if kind not in ("building", "floor", "room", "workspace", "asset"):
            return False
        if node not in self.visible() or node in self.expanded:
            return False
        self.expanded.add(node)
        if node not in self.memory:
            self.memory.append(node)
        return True

    def contract(self, node: str) -> bool:
        if node not in self.expanded:
            return False
        self.expanded = {e for e in self.expanded if e != node and node not in chain_up(self.graph, e)}
        return True


ALL_NODES = sorted(building().nodes)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans(), st.booleans())
def test_expand_contract_match_the_oracle(data: st.DataObject, top_only: bool, with_poses: bool) -> None:
    """Each step draws a command: mostly expanding a visible node or contracting an expanded one (so sequences
    go deep: floor, room, asset, then contract a level above), sometimes any command on any node (refusals)."""
    graph = building()
    view = collapse(graph, top_only=top_only, with_poses=with_poses)
    oracle = OracleView(graph, top_only, with_poses)
    assert view.visible_ids() == oracle.visible()
    for _ in range(data.draw(st.integers(1, 30))):
        visible, expanded = sorted(oracle.visible()), sorted(oracle.expanded)
        choices = [st.tuples(st.just("expand"), st.sampled_from(visible))]
        if expanded:
            choices.append(st.tuples(st.just("contract"), st.sampled_from(expanded)))
        choices.append(st.tuples(st.sampled_from(["expand", "contract"]), st.sampled_from(ALL_NODES)))
        name, node = data.draw(st.one_of(choices))
        before = view.visible_ids()
        allowed = oracle.expand(node) if name == "expand" else oracle.contract(node)
        if allowed:
            changed = set(view.expand(node) if name == "expand" else view.contract(node))
        else:
            with pytest.raises(GraphError):
                view.expand(node) if name == "expand" else view.contract(node)
            changed = set()
        after = oracle.visible()
        assert view.visible_ids() == after, (name, node)
        assert changed == (after - before if name == "expand" else before - after)
        assert set(view.expanded) == oracle.expanded and view.memory == oracle.memory
        assert set(view.expanded) <= after  # nothing hidden stays expanded
        assert set(view.expandable_ids()) == {
            n
            for n in after
            if graph.nodes[n].type in ("building", "floor", "room", "workspace", "asset") and graph.children(n)
        }


def test_a_floor_view_opens_floor_then_room_and_contracting_the_floor_hides_both() -> None:
    graph = building()
    view = collapse(graph, top_only=True)
    assert {graph.nodes[n].type for n in view.visible_ids()} == {"floor", "agent"}
    rooms = view.expand("floor1")
    assert rooms and all(graph.nodes[r].type == "room" and graph.parent(r) == "floor1" for r in rooms)
    room = rooms[0]
    contents = view.expand(room)
    assert set(contents) == {d for d in graph.descendants(room) if graph.nodes[d].type != "pose"}
    hidden = view.contract("floor1")
    assert set(hidden) == set(rooms) | set(contents)
    assert view.expanded == [] and view.memory == ["floor1", room]
    with pytest.raises(GraphError, match="not visible"):
        view.expand(room)


def test_floors_first_is_chosen_above_the_room_count_on_buildings_with_floors() -> None:
    graph = building()  # 9 rooms on 3 floors
    assert floors_first(graph, 8) and not floors_first(graph, 9) and not floors_first(graph, 0)
    one_floor = generate_building(BuildingSpec(floors=1, rooms_per_floor=12, assets_per_room=1, objects_per_asset=0))
    assert not floors_first(one_floor, 1)  # one floor: starting there saves nothing
    office = load_env("office")  # 37 rooms: the default (150) keeps the room-level view
    assert not floors_first(office, 150)
