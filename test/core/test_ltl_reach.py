"""reach(x) is measured to x's extent (its bounding box or size), and a room's centre never stands in for an object.

One room R with a 4 m x 2 m table (a `bbox`) whose centre is the room's centre, a 1 m tray on it (a `size`), a cup
with no position on the table, a pen lying in the room with no position, and a mug lying in the room near the
table's edge (no support, as the Stanford data leaves objects). E is a pose 0.6 m from the table's edge."""

from __future__ import annotations

import math
import shutil
from typing import Any

import pytest
from hostile_updates import forged

from sayplan_core.graph import graph_from_dict
from sayplan_core.graph.model import SceneGraph
from sayplan_core.ltl import NoSatisfyingPathError, ProductSearch, build_dfa, parse_prefix
from sayplan_core.ltl.domain import SearchDomain, footprint
from sayplan_core.sim.plan import PlanStep

REACH = 1.0
needs_mona = pytest.mark.skipif(shutil.which("mona") is None, reason="MONA (Debian package 'mona') is not installed")
if shutil.which("mona") is None:
    print("test_ltl_reach: the Debian package 'mona' is missing; the planning tests skip")
TABLE = {"min": [-2.0, -1.0, 0.0], "max": [2.0, 1.0, 0.8]}


def node(i: str, kind: str, x: float | None = None, y: float = 0.0, **attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": i, "type": kind, "attributes": attributes}
    if x is not None:
        out["position"] = [x, y, 0.0]
    return out


def scene() -> SceneGraph:
    doc = {
        "nodes": [
            {"id": "floor1", "type": "floor"},
            node("R", "room", 0.0, 0.0),
            node("E", "pose", 2.6, 0.9),
            node("P", "pose", 6.0, 0.9),
            node("table", "asset", 0.0, 0.0, bbox=TABLE),
            node("tray", "object", 1.2, 0.5, size=[1.0, 1.0, 0.05]),
            node("cup", "object"),
            node("pen", "object"),
            node("mug", "object", 2.3, 0.0, size=[0.1, 0.1, 0.1]),
            {"id": "robot", "type": "agent", "attributes": {"location": "P"}},
        ],
        "edges": [
            {"source": "R", "relation": "in", "target": "floor1"},
            *({"source": p, "relation": "in", "target": "R"} for p in ("E", "P", "table", "pen", "mug")),
            {"source": "tray", "relation": "ontop_of", "target": "table"},
            {"source": "cup", "relation": "ontop_of", "target": "table"},
            {"source": "R", "relation": "connected_to", "target": "E"},
            {"source": "E", "relation": "connected_to", "target": "P"},
        ],
    }
    return graph_from_dict(doc)


def test_reach_is_measured_to_the_extent() -> None:
    graph = scene()
    domain = SearchDomain(graph, {"table", "tray", "cup", "mug"}, REACH)
    e = domain.index["E"]
    for atom in ("table", "tray", "cup"):
        centre = graph.nodes[atom].position or graph.nodes["table"].position
        assert centre is not None
        assert math.hypot(centre[0] - 2.6, centre[1] - 0.9) > REACH, atom  # out of reach of the centre ...
        assert e in domain.where(atom), atom  # ... within reach of the edge
    assert footprint(graph, "cup") == footprint(graph, "table")  # no position: its support's extent
    assert domain.where("table") == sorted(domain.where("table"))
    # the mug lies in the room 0.25 m from the table's edge: accessing the table reaches it
    assert domain.index["table"] in domain.where("mug")


@needs_mona
def test_a_large_table_within_reach_of_its_edge_is_planned_from_there() -> None:
    graph = scene()
    for text in ("F tray", "F table", "F cup", "& F tray F cup"):
        path = ProductSearch(graph, build_dfa(parse_prefix(text)), reach_distance=REACH).search("P")
        assert path.steps == [PlanStep("goto", "E"), PlanStep("done", "")], text
        assert path.cost == pytest.approx(6.0 - 2.6), text


@needs_mona
def test_a_room_centre_never_stands_in_for_an_object() -> None:
    graph = scene()
    assert footprint(graph, "pen") is None  # lying in R with no position: R's centre is not used
    domain = SearchDomain(graph, {"pen", "R"}, REACH)
    assert domain.where("pen") == []
    assert domain.index["R"] in domain.where("R")
    with pytest.raises(NoSatisfyingPathError, match="pen lies directly in R and has no position"):
        ProductSearch(graph, build_dfa(parse_prefix("F pen")), reach_distance=REACH).search("P")


@pytest.mark.parametrize(
    "bad",
    [
        {"bbox": {"min": [1.0, 0.0, 0.0], "max": [0.0, 1.0, 1.0]}},  # min above max
        {"bbox": {"min": ["a", 0.0, 0.0], "max": [1.0, 1.0, 1.0]}},
        {"bbox": [[0, 0, 0], [1, 1, 1]]},
        {"size": [-3.0, 1.0, 1.0]},
        {"size": [math.inf, 1.0, 1.0]},
        {"size": "big"},
    ],
)
def test_a_malformed_extent_is_ignored_for_the_position(bad: dict[str, Any]) -> None:
    graph = scene()
    graph.replace_node(forged(graph.nodes["tray"], attributes=bad))  # some the constructor refuses (inf)
    box = footprint(graph, "tray")
    assert box is not None and (box.x0, box.y0, box.x1, box.y1) == (1.2, 0.5, 1.2, 0.5)
