"""Every importer accounts for every key it is given: a scene in a layout close to a supported one (rooms keyed by
id, objects nested in the rooms, a neighbour list per room) is refused with the keys named, not imported as bare
rooms with invented links; and for each importer a property test adds random keys and misspells random known ones
at random depths of a valid document. The import either refuses naming a changed key, or succeeds with its
report naming every one of them, and keeps every node and link the document holds except those it reports
dropped. What a document holds is counted here from the file formats, not from the importers' code."""

from __future__ import annotations

import copy
import json
import string
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.cli import main as cli_main
from sayplan_core.graph import GraphError
from sayplan_core.graph.importers import Imported, ImportOptions, import_file, import_grasif, import_sayplan
from sayplan_core.graph.importers.stanford import import_stanford

DATA = Path(__file__).parent / "data"
#: Room to name every problem: the test checks what is named, not where the list is cut.
OPTIONS = ImportOptions(max_problems=10_000)
PROPERTY = settings(max_examples=40, derandomize=True, deadline=None)

# ----------------------------------------------------------------------------- the layout of the issue
NEAR_GRASIF = {
    "rooms": {
        "kitchen": {
            "objects": {"mug-1": {"relation": "ontop_of", "related_to": "table-1"}, "apple-1": {}},
            "neighbours": ["hall"],
        },
        "hall": {"objects": {"umbrella-1": {}}, "neighbours": ["kitchen", "office"]},
        "office": {"neighbours": ["hall"]},
    }
}


def test_rooms_with_nested_objects_and_neighbours_are_refused_naming_every_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 0, 3 rooms and an invented hallway, every object and room link dropped without a word."""
    source = tmp_path / "near.json"
    source.write_text(json.dumps(NEAR_GRASIF))
    assert cli_main(["env", "import", str(source), str(tmp_path / "out.json")]) != 0
    err = capsys.readouterr().err
    for room, objects in (("kitchen", 2), ("hall", 1)):
        assert f"rooms.{room}.objects: {objects} item(s) this format does not read there" in err, err
    for room, links in (("kitchen", 1), ("hall", 2), ("office", 1)):
        assert f"rooms.{room}.neighbours: {links} item(s)" in err, err
    assert "--connectivity FILE" in err and "'place'" in err, err
    assert not (tmp_path / "out.json").exists()


def test_a_field_no_importer_reads_is_named_and_the_rest_imported() -> None:
    data = copy.deepcopy(json.loads((DATA / "grasif_keyed_kitchen.json").read_text()))
    data["objects"]["apple-1"]["colour"] = "red"
    data["author"] = "me"
    imported = import_grasif(data)
    assert imported.unread_keys == ["author", "objects.apple-1.colour"]
    assert "2 key(s) in the data not read" in imported.summary() and "objects.apple-1.colour" in imported.summary()
    assert "apple-1" in imported.graph.nodes


def test_the_cli_says_on_stderr_which_keys_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 0 with a summary on stdout is not enough: piped away, it would hide what the graph lost."""
    data = copy.deepcopy(json.loads((DATA / "grasif_keyed_kitchen.json").read_text()))
    data["objects"]["apple-1"]["colour"] = "red"
    source = tmp_path / "extra.json"
    source.write_text(json.dumps(data))
    assert cli_main(["env", "import", str(source), str(tmp_path / "out.json")]) == 0
    err = capsys.readouterr().err
    assert "sayplan: warning: 1 key(s) in the data not read" in err and "objects.apple-1.colour" in err, err


def test_sayplan_links_that_contradict_a_nodes_place_are_refused() -> None:
    data = json.loads((DATA / "sayplan_appendix_l.json").read_text())
    data["links"].append("kitchen↔bed1")  # bed1's own 'room' is bobs_room
    with pytest.raises(GraphError, match="places 'bed1' in 'kitchen', but it is in 'bobs_room'"):
        import_sayplan(data)


def test_sayplan_reads_state_and_states_both() -> None:
    data = json.loads((DATA / "sayplan_appendix_l.json").read_text())
    data["nodes"]["asset"][1]["states"] = ["locked"]  # beside its "state": "closed"
    graph = import_sayplan(data).graph
    assert set(graph.nodes["wardrobe2"].states) == {"closed", "locked"}


# ----------------------------------------------------------------------------- mutations
#: Every key of each format (from its description, not the importer), so a misspelling never makes another real
#: key and an added key is never one of them.
FORMAT_KEYS = {
    "sayplan": {"nodes", "links", "name", "id", "state", "states", "affordances", "attributes", "position"}
    | {"location", "room", "floor", "agent", "asset", "object", "pose"},
    "grasif": {"places", "place", "rooms", "room", "assets", "asset", "objects", "object", "agent", "nodes"}
    | {"scene", "name", "id", "type", "properties", "position", "states", "affordances", "located", "related_to"}
    | {"relation", "location", "holding"},
    "stanford": {"building", "room", "object", "camera", "name", "function", "id", "scene_category"}
    | {"floor_number", "location", "size", "volume", "class_", "parent_room", "material", "action_affordance"}
    | {"tactile_texture", "floor_area", "parent_building", "surface_coverage", "visual_texture", "FOV"}
    | {"modality", "resolution", "rotation"},
}
NAME = st.text(alphabet=string.ascii_lowercase + "_", min_size=3, max_size=12)
SCALAR = st.one_of(st.integers(-5, 5), st.text(alphabet=string.ascii_letters, max_size=6), st.booleans(), st.none())
VALUE = st.one_of(
    SCALAR,
    st.lists(SCALAR, max_size=3),
    st.dictionaries(NAME, SCALAR, max_size=2),
    st.dictionaries(NAME, st.dictionaries(NAME, SCALAR, max_size=2), min_size=1, max_size=2),  # records: nodes
)


Keyed = Callable[[tuple[Any, ...], Any], bool]


def mappings(value: Any, path: tuple[Any, ...], keyed: Keyed) -> Iterator[tuple[Any, ...]]:
    """The path of every mapping whose keys are field names (not ids: a key there is a node)."""
    if isinstance(value, dict):
        if not keyed(path, value):
            yield path
        for key, item in value.items():
            yield from mappings(item, (*path, key), keyed)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from mappings(item, (*path, index), keyed)


def get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def misspell(draw: st.DrawFn, key: str) -> str:
    i = draw(st.integers(0, len(key) - 1))
    how = draw(st.sampled_from(["drop", "double", "swap", "replace"]))
    if how == "drop" and len(key) > 1:
        return key[:i] + key[i + 1 :]
    if how == "swap" and i + 1 < len(key) and key[i] != key[i + 1]:
        return key[:i] + key[i + 1] + key[i] + key[i + 2 :]
    if how == "replace":
        return key[:i] + draw(st.sampled_from([c for c in "qxzk" if c != key[i]])) + key[i + 1 :]
    return key[:i] + key[i] + key[i:]


@st.composite
def mutated(draw: st.DrawFn, document: Any, keyed: Keyed, known: set[str]) -> tuple[Any, list[str]]:
    """The document with 1-3 keys added or misspelt at random depths, and the new keys' names. Nothing changes
    under a changed key (a refused key's contents are not read, so not named)."""
    doc = copy.deepcopy(document)
    changed: list[str] = []
    paths: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(1, 3))):
        targets = [t for t in mappings(doc, (), keyed) if not any(t[: len(c)] == c for c in paths)]
        where = draw(st.sampled_from(targets))
        target = get(doc, where)
        names = [
            k
            for k in target
            if isinstance(k, str) and k not in changed and not any(c[: len(where) + 1] == (*where, k) for c in paths)
        ]
        if names and draw(st.booleans()):
            old = draw(st.sampled_from(sorted(names)))
            new = misspell(draw, old)
            if new in known or new in target or not new:
                continue
            target[new] = target.pop(old)
        else:
            new = draw(NAME.filter(lambda k, taken=set(target): k not in known and k not in taken))
            target[new] = draw(VALUE)
        changed.append(new)
        paths.append((*where, new))
    return doc, changed


#: How each property test's examples ended (refused, imported): both must occur, or a path went untested.
OUTCOMES: Counter[str] = Counter()


def check(run: Callable[[], Imported], changed: list[str], given: Callable[[Imported], tuple[int, int]]) -> None:
    """Refused naming a changed key (a refusal of the whole file at its top reads no further), or imported naming
    each of them and keeping or reporting every node and link: `given(imported)` is (nodes the document holds -
    kept - dropped, links likewise), which must be (0, 0)."""
    try:
        imported = run()
    except GraphError as exc:
        assert any(key in str(exc) for key in changed), f"refused without naming any of {changed}: {exc}"
        OUTCOMES["refused"] += 1
        return
    report = " ".join(imported.notes)
    missing = [key for key in changed if key not in report]
    assert not missing, f"imported without naming {missing}: {imported.notes}"
    assert given(imported) == (0, 0), (imported.dropped, imported.notes)
    OUTCOMES["imported"] += 1


def both_outcomes(run: Callable[[], None]) -> None:
    """Run a property test and check that some examples were refused and some imported."""
    OUTCOMES.clear()
    run()
    assert OUTCOMES["refused"] and OUTCOMES["imported"], OUTCOMES


def kept(imported: Imported) -> tuple[int, set[frozenset[str]]]:
    """Nodes and links of the graph from the data: not the importer's synthetic hallway and its links."""
    graph = imported.graph
    made = {n for n, node in graph.nodes.items() if node.attributes.get("synthetic") or node.type == "floor"}
    links = {frozenset((a, b)) for a, b in graph.nav.edges() if a not in made and b not in made}
    return len(graph) - len(made), links


# ----------------------------------------------------------------------------- SayPlan JSON
SAYPLAN = json.loads((DATA / "sayplan_appendix_l.json").read_text())


def sayplan_given(doc: dict[str, Any]) -> Callable[[Imported], tuple[int, int]]:
    groups = doc["nodes"]
    nav = {n["id"] for kind in ("room", "pose") for n in groups.get(kind, [])}
    links = {frozenset(link.split("↔")) for link in doc["links"] if set(link.split("↔")) <= nav}
    total = sum(len(items) for items in groups.values())

    def left(imported: Imported) -> tuple[int, int]:
        nodes, found = kept(imported)
        dropped = imported.dropped
        return total - nodes - dropped.get("nodes", 0), len(links - found) - dropped.get("links", 0)

    return left


def test_sayplan_json_accounts_for_added_and_misspelt_keys() -> None:
    @PROPERTY
    @given(mutated(SAYPLAN, lambda path, value: False, FORMAT_KEYS["sayplan"]))
    def run(case: tuple[Any, list[str]]) -> None:
        doc, changed = case
        check(lambda: import_sayplan(doc, OPTIONS), changed, sayplan_given(SAYPLAN))

    both_outcomes(run)


# ----------------------------------------------------------------------------- GRASIF (three layouts)
GRASIF = {name: json.loads((DATA / f"{name}.json").read_text()) for name in ("grasif_keyed_kitchen",)}
GRASIF["grasif_living_room"] = json.loads((DATA / "grasif_living_room.json").read_text())
GRASIF["grasif_node_list_scene"] = json.loads((DATA / "grasif_node_list_scene.json").read_text())
#: Sections keyed by node id (a key there is a node, not a field).
SECTIONS = {"places", "place", "rooms", "room", "assets", "asset", "objects", "object"}


def grasif_nodes(doc: Any) -> int:
    if isinstance(doc, list):
        return len(doc)
    root = doc.get("nodes", doc)
    agent = root.get("agent")
    return sum(len(root[k]) for k in SECTIONS if k in root) + (len(agent) if isinstance(agent, list) else 1)


@pytest.mark.parametrize("name", sorted(GRASIF))
def test_grasif_accounts_for_added_and_misspelt_keys(name: str) -> None:
    document = GRASIF[name]
    total = grasif_nodes(document)

    def keyed(path: tuple[Any, ...], value: Any) -> bool:
        return len(path) in (1, 2) and path[-1] in SECTIONS and path[0] in (*SECTIONS, "nodes")

    def left(imported: Imported) -> tuple[int, int]:
        nodes, links = kept(imported)
        return total - nodes - imported.dropped.get("nodes", 0), len(links)  # GRASIF holds no links

    @PROPERTY
    @given(mutated(document, keyed, FORMAT_KEYS["grasif"]))
    def run(case: tuple[Any, list[str]]) -> None:
        doc, changed = case
        check(lambda: import_grasif(doc, OPTIONS), changed, left)

    both_outcomes(run)


# ----------------------------------------------------------------------------- Stanford 3D Scene Graph
STANFORD = {
    "building": {"name": "Tiny", "function": "residential", "floor_area": 80.0, "num_floors": 1},
    "room": {
        1: {"id": 1, "scene_category": "kitchen", "floor_number": "A", "location": [0.0, 0.0, 1.0], "volume": 3.0},
        2: {"id": 2, "scene_category": "bedroom", "floor_number": "A", "location": [5.0, 0.0, 1.0], "size": [4, 4, 2]},
    },
    "object": {
        10: {"id": 10, "class_": "cup", "parent_room": 1, "location": [0.5, 0, 1], "material": ["ceramic"]},
        11: {"id": 11, "class_": "bed", "parent_room": 2, "action_affordance": ["sleep on"], "volume": 1.0},
        12: {"id": 12, "class_": "chair", "parent_room": 7},  # in no room: left out, counted
    },
    "camera": {0: {"id": 0, "name": "p0"}},
}


def test_stanford_accounts_for_added_and_misspelt_keys(tmp_path: Path) -> None:
    path = tmp_path / "3DSceneGraph_Tiny.npz"
    total = 1 + len(STANFORD["room"]) + len(STANFORD["object"])  # the building, its rooms and objects

    def left(imported: Imported) -> tuple[int, int]:
        nodes, links = kept(imported)
        return total - nodes - imported.dropped.get("objects", 0), len(links)  # the dataset holds no links

    @PROPERTY
    @given(mutated(STANFORD, lambda path, value: len(path) == 1, FORMAT_KEYS["stanford"]))
    def run(case: tuple[Any, list[str]]) -> None:
        doc, changed = case
        np.savez(path, output=np.array(doc, dtype=object))
        check(lambda: import_stanford(path, OPTIONS), changed, left)

    both_outcomes(run)


# ----------------------------------------------------------------------------- Hydra / Spark-DSG JSON
@pytest.fixture(scope="module")
def hydra_document() -> dict[str, Any]:
    pytest.importorskip("spark_dsg", reason="spark-dsg (requirements/interop.txt) is not installed")
    sys.path.insert(0, str(Path(__file__).parent))
    import tempfile

    from test_spark_dsg import apartment

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "apartment.json"
        apartment().save(str(path), include_mesh=False)
        document: dict[str, Any] = json.loads(path.read_text())
    return document


def hydra_keyed(path: tuple[Any, ...], value: Any) -> bool:
    """The labelspaces (keyed by layer, read by spark_dsg as data) and the header's fields stay as written."""
    return "labelspaces" in path or "SPARK_DSG_header" in path or "layer_names" in path


def test_hydra_accounts_for_added_and_misspelt_keys(tmp_path: Path, hydra_document: dict[str, Any]) -> None:
    layer = {node["id"]: (node["layer"], node["partition"]) for node in hydra_document["nodes"]}
    total = len(hydra_document["nodes"])
    nav = [
        e
        for e in hydra_document["edges"]
        if layer[e["source"]] == layer[e["target"]] and layer[e["source"]][0] in (3, 4)
    ]
    known = {k for node in hydra_document["nodes"] for k in node["attributes"]} | set(hydra_document)
    known |= {"id", "layer", "partition", "source", "target", "info", "weight", "weighted", "type", "metadata"}
    known |= {"sayplan", "labelspaces", "w", "x", "y", "z", "r", "g", "b", "a", "cols", "rows", "data"}

    def left(imported: Imported) -> tuple[int, int]:
        import spark_dsg

        nodes, links = kept(imported)
        ours = imported.id_map
        given = {frozenset(ours[str(spark_dsg.NodeSymbol(e[end]))] for end in ("source", "target")) for e in nav}
        dropped = sum(
            imported.dropped.get(k, 0) for k in ("agent poses", "nodes of other layers", "nodes spark_dsg refused")
        )
        return total - nodes - dropped, len(given - links) - imported.dropped.get("links", 0)

    @PROPERTY
    @given(mutated(hydra_document, hydra_keyed, known))
    def run(case: tuple[Any, list[str]]) -> None:
        doc, changed = case
        path = tmp_path / "apartment.json"
        path.write_text(json.dumps(doc))
        check(lambda: import_file(path, "hydra", OPTIONS), changed, left)

    both_outcomes(run)
