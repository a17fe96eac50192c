"""SayPlan-style JSON (SayPlan appendix K/L): nodes grouped by type plus `links`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sayplan_core.graph.importers.common import (
    Builder,
    Imported,
    ImportOptions,
    attributes,
    closest,
    load_json,
    norm_relation,
    unread_text,
)
from sayplan_core.graph.model import GraphError, SceneGraph

EXPECTED = "SayPlan JSON: a 'nodes' object grouped by type (room, pose, asset, object, agent) and 'links'"

_STATE_RELATION = re.compile(r"^\s*(ontop_of|inside_of|on_top_of|inside|on)\s*\(\s*([^)]+?)\s*\)\s*$")
_LINK_SPLIT = re.compile(r"\s*(?:↔|<->|<=>|--)\s*")
_IGNORED_STATES = {"", "free", "none", "null"}
#: The keys read: of the file, of every node, and of nodes of one type.
_ROOT_KEYS = {"nodes", "links", "name"}
_NODE_KEYS = {"id", "name", "state", "states", "affordances", "attributes", "position"}
_TYPE_KEYS = {"agent": {"location"}, "asset": {"room"}, "room": {"floor"}, "pose": {"floor"}}
#: What a refusal of a key holding nodes or links adds, by a word in the key.
ADVICE = {
    word: "SayPlan JSON lists every node in its type's group under 'nodes', and joins rooms, poses and what is in "
    "them with 'links' ('a<->b')"
    for word in ("object", "asset", "room", "pose", "neighbo", "connect", "link", "edge", "adjacen", "door", "node")
}


def looks_like(data: Any) -> bool:
    """Nodes grouped by type plus links: what `auto` takes for SayPlan JSON."""
    return isinstance(data, Mapping) and isinstance(data.get("nodes"), Mapping) and "links" in data


def import_sayplan(
    path_or_data: str | Path | Mapping[str, Any], options: ImportOptions | None = None, name: str = ""
) -> Imported:
    data, source = load_json(path_or_data)
    groups = data.get("nodes") if isinstance(data, Mapping) else None
    if not isinstance(groups, Mapping):
        raise GraphError(f"{source}: not {EXPECTED}{unread_text('', data, _ROOT_KEYS)}")
    assert isinstance(data, Mapping)
    b = Builder(name or str(data.get("name", Path(source).stem if source != "<dict>" else "sayplan")), source, options)
    b.keys("", data, _ROOT_KEYS, ADVICE)
    b.place_hint = {
        "asset": "give it a 'room' or a link to its room",
        "object": "give it a state such as ontop_of(table), or a link to its asset or room",
    }
    type_map = {"floor": "floor", "room": "room", "pose": "pose", "asset": "asset", "object": "object"}
    type_map["agent"] = "agent"
    object_parent: dict[str, tuple[str, str]] = {}
    agent_id: str | None = None
    agent_location: str | None = None
    for group, items in groups.items():
        node_type = type_map.get(str(group))
        if node_type is None:
            b.problem(f"unknown node group '{group}'{closest(str(group), type_map)} (expected {', '.join(type_map)})")
            continue
        if not isinstance(items, list):
            b.problem(f"nodes.{group} must be a list")
            continue
        for index, item in enumerate(items):
            if isinstance(item, Mapping):
                b.keys(f"nodes.{group}[{index}]", item, _NODE_KEYS | _TYPE_KEYS.get(node_type, set()), ADVICE)
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                b.problem(f"nodes.{group}[{index}] needs a string 'id'")
                continue
            node_id = item["id"]
            states: list[str] = []
            given = [state for key in ("state", "states") for state in b.str_list(node_id, key, item.get(key))]
            for state in given:
                if state.lower() in _IGNORED_STATES:
                    continue
                match = _STATE_RELATION.match(state)
                where = (match.group(2), norm_relation(match.group(1))) if match else ("__agent__", "inside_hand")
                if node_type != "object" or not (match or state.strip() == "inside_hand"):
                    states.append(state.strip())
                elif object_parent.setdefault(node_id, where) != where:
                    b.problem(f"object '{node_id}' has two places in its states: {given}")
            fields: dict[str, Any] = {
                "name": item.get("name"),
                "states": states,
                "affordances": b.str_list(node_id, "affordances", item.get("affordances")),
                "attributes": attributes(item.get("attributes")),
                "position": item.get("position"),
            }
            if node_type == "agent":
                agent_id = node_id
                agent_location = item.get("location")
                fields["attributes"] = {
                    **fields["attributes"],
                    **({"location": agent_location} if agent_location else {}),
                }
            if b.node(node_id, node_type, **fields) is not None:
                b.id_map[node_id] = node_id  # SayPlan ids are kept as they are
            if node_type == "asset" and isinstance(item.get("room"), str) and item["room"]:
                b.child(node_id, "in", item["room"])
            elif node_type == "asset" and item.get("room") is not None:
                b.problem(f"node '{node_id}': 'room' must be a room id (a string), got {item['room']!r}")
                b.unplaced.add(node_id)
            if node_type in ("room", "pose") and isinstance(item.get("floor"), str):
                b.child(node_id, "in", item["floor"])
            elif node_type in ("room", "pose") and item.get("floor") is not None:
                b.problem(f"node '{node_id}': 'floor' must be a floor id (a string), got {item['floor']!r}")
    placed = {e["source"]: e["target"] for e in b.edges}  # what the nodes' own fields place
    links = data.get("links", []) or []
    if not isinstance(links, list):
        b.problem("'links' must be a list")
        links = []
    for raw in links:
        if isinstance(raw, str):
            ends = _LINK_SPLIT.split(raw.strip())
        elif isinstance(raw, (list, tuple)):
            ends = [str(e) for e in raw]
        else:
            b.problem(f"link {raw!r} must be 'a<->b' or [a, b]")
            continue
        if len(ends) != 2:
            b.problem(f"link {raw!r} must join exactly two nodes")
            continue
        a, c = ends
        ta, tc = b.types.get(a), b.types.get(c)
        if ta is None or tc is None:
            missing = a if ta is None else c
            b.problem(f"link {raw!r} refers to node '{missing}', which does not exist{b.like(missing)}")
            continue
        pair = {ta, tc}
        if pair <= {"room", "pose"}:
            b.link(a, c)
        elif "agent" in pair:
            other = c if ta == "agent" else a
            if b.types[other] not in ("room", "pose"):
                b.problem(
                    f"link {raw!r}: the agent links only to the room or pose where it is (an object it holds has "
                    "the state inside_hand)"
                )
            elif agent_location is None:
                agent_location = other
                for node in b.nodes:
                    if node["id"] == agent_id:
                        node.setdefault("attributes", {})["location"] = other
            elif agent_location != other:
                b.problem(f"link {raw!r} puts the agent at '{other}', but it is at '{agent_location}'")
        else:
            order = ("floor", "room", "asset", "object")
            pa, pc = (order.index(ta) if ta in order else -1), (order.index(tc) if tc in order else -1)
            parent, child = (a, c) if pa < pc else (c, a)
            before = object_parent.get(child, ("", ""))[0] if b.types[child] == "object" else placed.get(child)
            if before is not None and before not in ("", parent):
                held = "held by the agent (inside_hand)" if before == "__agent__" else f"in '{before}'"
                b.problem(f"link {raw!r} places '{child}' in '{parent}', but it is {held}")
            elif b.types[child] == "object":
                object_parent.setdefault(child, (parent, "ontop_of"))
            elif before is None:
                b.child(child, "in", parent)
                placed[child] = parent
    for obj, (parent, relation) in object_parent.items():
        if parent == "__agent__":
            if agent_id is None:
                b.problem(f"object '{obj}' is inside_hand but the graph has no agent")
                continue
            parent = agent_id
        b.child(obj, relation, parent)
    b.has_connectivity = any(e["relation"] == "connected_to" for e in b.edges)
    imported = b.build(EXPECTED)
    imported.format = "sayplan"
    return imported


def import_sayplan_json(
    path_or_data: str | Path | Mapping[str, Any], name: str = "", options: ImportOptions | None = None
) -> SceneGraph:
    return import_sayplan(path_or_data, options, name).graph
