"""Imports without real connectivity (issue 27): the links the importer invents are counted, marked and warned
about, and never join what the data keeps apart. The oracle is the rule written out here on buildings built in the
test: a room is linked to the hallway pose of each floor the data places it on, a floor's rooms to its pose only, and
two floors meet only through a staircase or elevator room the data places on both. A Stanford room with no
`floor_number` is on no floor, whatever its height, and the summary names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.cli import main as cli_main
from sayplan_core.graph.importers import import_stanford
from sayplan_core.graph.model import SceneGraph

CATEGORIES = ("kitchen", "bedroom", "staircase", "elevator", "living room")


def write_building(path: Path, rooms: dict[int, dict[str, Any]]) -> None:
    """A Gibson 3DSG .npz (one pickled dict under 'output') with these rooms and one couch in the first."""
    first = min(rooms)
    output = {
        "building": {"id": 0, "name": "Testville"},
        "room": rooms,
        "object": {900: {"id": 900, "class_": "couch", "parent_room": first}},
    }
    np.savez(path, output=np.array(output, dtype=object))


def is_floor_joiner(category: str) -> bool:
    return category in ("staircase", "elevator")


def oracle_groups(rooms: dict[int, dict[str, Any]]) -> dict[str, set[str]]:
    """Floor label -> the labels reachable from it: floors with rooms of their own, merged through every staircase or
    elevator room whose floor_number lists more than one of them (the rule, by brute force over pairs)."""

    def labels(room: dict[str, Any]) -> list[str]:
        raw = room["floor_number"]
        return list(dict.fromkeys(raw)) if isinstance(raw, list) else [raw]

    own = {labels(r)[0] for r in rooms.values()}
    reach = {f: {f} for f in own}
    changed = True
    while changed:
        changed = False
        for room in rooms.values():
            on = [f for f in labels(room) if f in own]
            if not is_floor_joiner(room["scene_category"]) or labels(room)[0] not in own:
                continue
            for a in on:
                for b in on:
                    if not reach[a] >= reach[b]:
                        reach[a] |= reach[b]
                        changed = True
        for a in own:
            for b in list(reach[a]):
                if not reach[a] >= reach[b]:
                    reach[a] |= reach[b]
                    changed = True
    return reach


def hubs(graph: SceneGraph) -> set[str]:
    return {n.id for n in graph.iter_nodes("pose") if "synthetic" in n.attributes}


room_spec = st.tuples(
    st.sampled_from(CATEGORIES),
    st.lists(st.sampled_from("ABCD"), min_size=1, max_size=3),
)


@settings(max_examples=40, derandomize=True, deadline=None)
@given(specs=st.lists(room_spec, min_size=1, max_size=9))
def test_invented_links_never_join_what_the_data_keeps_apart(tmp_path_factory: Any, specs: list[Any]) -> None:
    rooms = {
        i + 1: {"id": i + 1, "scene_category": cat, "floor_number": floors if len(floors) > 1 else floors[0]}
        for i, (cat, floors) in enumerate(specs)
    }
    path = tmp_path_factory.mktemp("npz") / "b.npz"
    write_building(path, rooms)
    imported = import_stanford(path)
    graph = imported.graph
    ours = {rid: f"{r['scene_category'].replace(' ', '_')}_{rid}" for rid, r in rooms.items()}
    hub = hubs(graph)
    edges = list(graph.nav.edges)
    assert imported.synthetic_links == len(edges) > 0
    for a, b in edges:
        assert (a in hub) != (b in hub), f"{a}<->{b}: every invented link joins a room to a hallway pose"
    reach = oracle_groups(rooms)
    first = {
        rid: (r["floor_number"] if isinstance(r["floor_number"], str) else r["floor_number"][0])
        for rid, r in rooms.items()
    }
    for rid, room in rooms.items():
        on = room["floor_number"] if isinstance(room["floor_number"], list) else [room["floor_number"]]
        wanted = {f"hall_floor_{f.lower()}" for f in on if f in set(first.values())}
        if not is_floor_joiner(room["scene_category"]):
            wanted = {f"hall_floor_{first[rid].lower()}"}
        assert set(graph.neighbours(ours[rid])) == wanted, ours[rid]
    for r1 in rooms:
        for r2 in rooms:
            together = graph.nav_component(ours[r1]) == graph.nav_component(ours[r2])
            assert together == (first[r2] in reach[first[r1]]), (ours[r1], ours[r2])
    groups = {frozenset(g) for g in reach.values()}
    if len(groups) > 1:
        assert sorted(map(sorted, imported.apart_floors)) == sorted(
            sorted(f"floor_{f.lower()}" for f in g) for g in groups
        )
        assert "floors left unlinked" in imported.synthetic_warning()
    else:
        assert imported.apart_floors == []


def test_a_staircase_whose_height_spans_both_floors_joins_them(tmp_path: Path) -> None:
    """The dataset gives one floor_number per room; a staircase 6 m tall reaches the rooms of the floor above."""

    def room(rid: int, cat: str, floor: str, z: float, height: float) -> dict[str, Any]:
        return {
            "id": rid,
            "scene_category": cat,
            "floor_number": floor,
            "location": np.array([0.0, 0.0, z]),
            "size": np.array([3.0, 3.0, height]),
        }

    rooms = {1: room(1, "kitchen", "A", 1.25, 2.5), 2: room(2, "bedroom", "B", 4.25, 2.5)}
    short = {**rooms, 3: room(3, "staircase", "A", 1.5, 3.0)}  # reaches 0.5 m into floor B: not on it
    tall = {**rooms, 3: room(3, "staircase", "A", 3.0, 6.0)}
    for building, joined in ((short, False), (tall, True)):
        path = tmp_path / f"{joined}.npz"
        write_building(path, building)
        graph = import_stanford(path).graph
        assert (graph.nav_component("kitchen_1") == graph.nav_component("bedroom_2")) is joined
        assert not graph.nav.has_edge("hall_floor_a", "hall_floor_b")
        if joined:
            assert graph.nodes["staircase_3"].attributes["joins_floors"] == ["floor_a", "floor_b"]


def test_two_staircases_one_per_floor_are_never_joined(tmp_path: Path) -> None:
    rooms = {
        1: {"id": 1, "scene_category": "staircase", "floor_number": "A"},
        2: {"id": 2, "scene_category": "staircase", "floor_number": "B"},
    }
    path = tmp_path / "b.npz"
    write_building(path, rooms)
    imported = import_stanford(path)
    assert not imported.graph.nav.has_edge("staircase_1", "staircase_2")
    assert imported.apart_floors == [["floor_a"], ["floor_b"]]
    wanted = "to link in a --connectivity file: staircase_1 (floor_a), staircase_2 (floor_b)"
    assert wanted in imported.summary()


def test_cli_warns_on_stderr_and_writes_the_count_beside_the_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rooms = {
        1: {"id": 1, "scene_category": "kitchen", "floor_number": "A"},
        2: {"id": 2, "scene_category": "bedroom", "floor_number": "B"},
        3: {"id": 3, "scene_category": "bathroom", "floor_number": "B"},
    }
    source = tmp_path / "b.npz"
    write_building(source, rooms)
    out = tmp_path / "b.json"
    assert cli_main(["--json", "env", "import", str(source), str(out)]) == 0
    text, err = capsys.readouterr()
    payload = json.loads(text)
    assert payload["synthetic_links"] == 3 and payload["unlinked_floors"] == [["floor_a"], ["floor_b"]]
    [warning] = err.splitlines()
    assert warning.startswith("sayplan: warning: 3 navigation link(s) are synthetic")
    assert "floors left unlinked: floor_a | floor_b" in warning
    ids = json.loads((tmp_path / "b.ids.json").read_text())
    assert ids["synthetic_links"] == 3 and ids["ids"]["room 2"] == "bedroom_2" and ids["ids"]["floor B"] == "floor_b"
    # real doors: nothing synthetic, no warning
    doors = tmp_path / "doors.json"
    doors.write_text(json.dumps(["kitchen_1 bedroom_2", "bedroom_2 bathroom_3"]))
    assert cli_main(["--json", "env", "import", str(source), str(out), "--connectivity", str(doors)]) == 0
    text, err = capsys.readouterr()
    assert json.loads(text)["synthetic_links"] == 0 and err == ""


def test_a_stanford_room_with_no_floor_number_is_put_on_no_floor(tmp_path: Path) -> None:
    """A Gibson room whose `floor_number` is missing sat on floor A, joined to floor A's invented hallway, even
    when its height is floor B's: the import joined what the data does not, and said nothing. It must be on no
    floor (joined only to the `hall` pose of rooms in no floor, as the docs say), and the summary names it."""

    def room(rid: int, category: str, floor: str | None, z: float) -> dict[str, Any]:
        return {
            "id": rid,
            "scene_category": category,
            "floor_number": floor,
            "location": np.array([0.0, 0.0, z]),
            "size": np.array([3.0, 3.0, 2.5]),
        }

    rooms = {1: room(1, "kitchen", "A", 1.25), 2: room(2, "bedroom", "B", 4.25), 3: room(3, "office", None, 4.25)}
    output = {"building": {"id": 0, "name": "T"}, "room": rooms, "object": {}}
    path = tmp_path / "b.npz"
    np.savez(path, output=np.array(output, dtype=object))
    imported = import_stanford(path)
    graph = imported.graph
    assert graph.parent("office_3") == "building_t"
    assert not graph.nav.has_edge("office_3", "hall_floor_a") and not graph.nav.has_edge("office_3", "hall_floor_b")
    assert graph.nav_component("office_3") != graph.nav_component("kitchen_1")
    assert "office_3" in imported.summary() and "floor_number" in imported.summary()
