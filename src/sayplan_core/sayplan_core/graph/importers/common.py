"""What every importer shares: reading input, options (connectivity, type overrides, the agent), the builder.

An importer turns its format into native node and edge dicts through a `Builder`,
which then applies the options every format gets the same way, collects every
problem it finds (up to a limit) instead of stopping at the first, refuses an
input that yields no rooms or no nodes, and hands the result to the native loader,
so imported files get exactly the same validation as native ones.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.closest import close_names
from sayplan_core.graph.importers.synthetic_links import invent
from sayplan_core.graph.model import (
    ALLOWED_PARENTS,
    HIERARCHY_RELATIONS,
    NAV_TYPES,
    GraphError,
    Node,
    SceneGraph,
    a_or_an,
    check_parent,
)
from sayplan_core.graph.native_format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    graph_from_dict,
    node_from_dict,
    parse_json,
    read_text,
)

#: Problems listed in one error before "and N more".
MAX_PROBLEMS = 20
#: The largest option file read (connectivity, type lists).
MAX_OPTION_FILE_BYTES = 16 * 1024 * 1024
_LINK_SPLIT = re.compile(r"\s*(?:↔|<->|<=>|--|\s)\s*")


def norm_relation(rel: str) -> str:
    rel = rel.strip().lower()
    return {"on_top_of": "ontop_of", "on": "ontop_of", "inside": "inside_of", "in": "inside_of"}.get(rel, rel)


def attributes(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.split(",") if p.strip()]
        return {"tags": parts}
    if isinstance(raw, list):
        return {"tags": [str(p) for p in raw]}
    return {"value": raw}


def class_of(node_id: str) -> str:
    """A node's class from its id: `cup-2`, `cup_2`, `cup2` -> `cup` (how GRASIF, Stanford and SayPlan name nodes)."""
    return re.sub(r"[-_]?\d+$", "", node_id) or node_id


def give_pickup(item: dict[str, Any]) -> None:
    """A node an importer decides is movable affords picking up, whatever the data listed."""
    affordances = list(item.get("affordances") or [])
    if not {"pickup", "pick_up"} & set(affordances):
        item["affordances"] = [*affordances, "pickup"]


def load_json(path_or_data: str | Path | Any) -> tuple[Any, str]:
    """The parsed input and a name for messages; a dict or list passed in is used as it is."""
    if isinstance(path_or_data, (Mapping, list)):
        return path_or_data, "<dict>"
    path = Path(path_or_data)
    return parse_json(read_text(path, "graph file"), str(path)), str(path)


def _read_option_file(path: str | Path, what: str) -> Any:
    path = Path(path)
    text = read_text(path, what, MAX_OPTION_FILE_BYTES)
    try:
        return files.load_yaml(text)  # YAML is a superset of JSON; aliases refused
    except yaml.YAMLError as exc:
        raise GraphError(f"{what} {path}: not valid YAML/JSON: {str(exc).splitlines()[0]}") from exc
    except RecursionError:
        raise GraphError(f"{what} {path}: nested too deeply") from None


# ----------------------------------------------------------------------------- options
@dataclass(frozen=True)
class ImportOptions:
    """What every importer accepts (one set of `sayplan env import` flags).

    connectivity: navigation links to use instead of inventing them (doors between rooms):
        a list of "a b" / "a<->b" / [a, b] / [a, b, metres], or {links: [...]}.
    types: classes whose type the data gets wrong, {object: [cup, ...], asset: [sofa, ...]};
        a node's class is its id without the trailing index (`cup_3` -> `cup`).
    agent_at: the room or pose where the robot is (adds an agent node, or moves the file's agent).
        A task list takes it in its init scenes only (a goal scene says where the robot must end).
    labels: class names of numeric semantic labels, {"objects": {3: cup}, "rooms": {1: kitchen}}, for formats
        that label nodes by number (Hydra) when the file has no labelspace; from a type list's labels/room_labels.
    """

    connectivity: tuple[tuple[str, str, float | None], ...] | None = None
    types: Mapping[str, str] = field(default_factory=dict)  # class -> node type
    labels: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    agent_at: str = ""
    max_problems: int = MAX_PROBLEMS


def read_connectivity(path: str | Path) -> tuple[tuple[str, str, float | None], ...]:
    data = _read_option_file(path, "connectivity file")
    return _links(data, f"connectivity file {path}")


def read_connectivity_by_task(path: str | Path) -> dict[str, tuple[tuple[str, str, float | None], ...]] | None:
    """A connectivity file keyed by task id (`{task-id: [links], ...}`, for a task list), or None when the file is
    one list of links for every scene."""
    data = _read_option_file(path, "connectivity file")
    if not isinstance(data, Mapping) or not data or "links" in data or "edges" in data:
        return None
    bad = [repr(str(task))[:80] for task, links in data.items() if not isinstance(links, (list, Mapping))]
    if bad:  # a mapping without links/edges can only be keyed by task id
        raise GraphError(
            f"connectivity file {path}: read as keyed by task id ({{task-id: [links], ...}}, as it has no 'links' "
            f"list), but these entries are not lists of links: {', '.join(bad[:10])}"
        )
    return {str(task): _links(links, f"connectivity file {path}, task '{task}'") for task, links in data.items()}


def read_agent_at_by_task(value: str) -> dict[str, str] | None:
    """`--agent-at FILE`: a YAML/JSON file `{task-id: room-or-pose, ...}` (for a task list); None when `value` is
    no such file (it is then a node id)."""
    path = Path(value)
    if not value or path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
        return None
    data = _read_option_file(path, "agent-at file")
    if not isinstance(data, Mapping) or not data:
        raise GraphError(f"agent-at file {path}: expected {{task-id: room-or-pose, ...}}")
    bad = [
        f"{str(task)[:80]!r}: {where!r:.40}" for task, where in data.items() if not isinstance(where, str) or not where
    ]
    if bad:
        raise GraphError(
            f"agent-at file {path}: expected {{task-id: room-or-pose, ...}}; these entries are not node ids: "
            + ", ".join(bad[:10])
        )
    return {str(task): str(where) for task, where in data.items()}


def _links(data: Any, where: str) -> tuple[tuple[str, str, float | None], ...]:
    if isinstance(data, Mapping):
        data = data.get("links", data.get("edges"))
    if not isinstance(data, list) or not data:
        raise GraphError(f"{where}: expected a non-empty list of links (or {{links: [...]}})")
    links: list[tuple[str, str, float | None]] = []
    problems: list[str] = []
    for index, raw in enumerate(data):
        weight: float | None = None
        if isinstance(raw, str):
            ends = [e for e in _LINK_SPLIT.split(raw.strip()) if e]
        elif isinstance(raw, (list, tuple)) and len(raw) in (2, 3):
            ends = [str(e) for e in raw[:2]]
            if len(raw) == 3:
                value = raw[2]
                ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                if not ok or value < 0:
                    problems.append(f"links[{index}]: weight must be a number >= 0, got {value!r}")
                    continue
                weight = float(value)
        else:
            ends = []
        if len(ends) != 2:
            problems.append(f"links[{index}]: {raw!r} must join two nodes ('a b', 'a<->b' or [a, b, metres])")
            continue
        links.append((ends[0], ends[1], weight))
    if problems:
        raise GraphError(_problem_text(where, problems, MAX_PROBLEMS))
    return tuple(links)


def closest(name: str, known: Any, count: int = 3, fallback: str = "") -> str:
    """' (closest: a, b)' naming the known ids most like `name`; when none is alike, '' or, given `fallback` (what
    the ids are), ' (<fallback>: the first few ids)', so a wrong id always comes with ids there are."""
    pool = [str(k) for k in known]
    found = close_names(name, pool, count)
    if found:
        return f" (closest: {', '.join(found)})"
    if not fallback or not pool:
        return ""
    shown = ", ".join(pool[:8]) + (f", ... ({len(pool)} in all)" if len(pool) > 8 else "")
    return f" ({fallback}: {shown})"


#: Words that name nodes or links in some scene-graph layout (`objects`, `rooms`, `neighbours`, `doors`, ...).
_CONTENT_WORDS = re.compile(
    r"object|asset|item|room|place|pose|floor|node|link|edge|neighbo|connect|adjacen|door|child|contain",
    re.IGNORECASE,
)
#: How many unread keys a note or an error names before "and N more".
MAX_KEYS_SHOWN = 20


def at(where: str, key: Any) -> str:
    """Where a key is, for messages: `rooms.kitchen` + `objects` -> `rooms.kitchen.objects`."""
    return f"{where}.{key}" if where else str(key)


def content_items(key: str, value: Any) -> int:
    """How many nodes or links `value` holds under `key` (0 when it looks like a plain field): a non-empty list
    or mapping whose entries are records, or one under a name such as `objects`, `rooms` or `neighbours`."""
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return 0
    if items and (any(isinstance(i, Mapping) for i in items) or _CONTENT_WORDS.search(key)):
        return len(items)
    return 0


def account_keys(
    where: str,
    item: Mapping[Any, Any],
    known: Collection[str],
    advice: Mapping[str, str] | None = None,
    said: set[str] | None = None,
) -> tuple[list[str], list[str]]:
    """Every key of `item` (found at `where`) the importer does not read, as (refusals, unread keys).

    A key like one the importer reads (`objcts`, `related_too`) is refused, not guessed: what the data meant
    for that key would be lost. A key holding nodes or links where the format has none (`objects` nested in a
    room, a room's `neighbours`) is refused: the graph would lose them. Any other key (a field this format does
    not have) is unread: the import goes on and its report names it. `advice` adds a sentence to a refusal whose
    key contains one of its words (`{"neighbo": "pass room links with --connectivity FILE"}`), once per `said`."""
    refusals: list[str] = []
    unread: list[str] = []
    for raw_key, value in item.items():
        key = str(raw_key)
        if key in known:
            continue
        path = at(where, key)
        alike = close_names(key, sorted(known), 1)
        count = content_items(key, value)
        if alike:
            refusals.append(
                f"{path}: unknown key '{key}' (did you mean '{alike[0]}'?); a key like one read here is refused, "
                "not guessed"
            )
        elif count:
            tip = next((text for word, text in (advice or {}).items() if word in key.casefold()), "")
            said = set() if said is None else said
            refusals.append(
                f"{path}: {count} item(s) this format does not read there (nodes or links the graph would lose)"
                + (f": {tip}" if tip and tip not in said else "")
            )
            said.add(tip)
        else:
            unread.append(path)
    return refusals, unread


def unread_text(where: str, data: Any, known: Collection[str]) -> str:
    """'; key(s) not read: ...' naming what of `data` (a mapping) is not among `known`, for an error that refuses
    the whole input (a misspelt `nodes` is why there are none), '' when every key is known."""
    if not isinstance(data, Mapping):
        return ""
    refusals, unread = account_keys(where, data, known)
    lines = [line.split(";")[0] for line in refusals] + unread
    return f"; key(s) not read: {named_keys(lines)}" if lines else ""


def named_keys(paths: list[str]) -> str:
    """`a.b, c.d, and N more`: keys for one line."""
    shown = ", ".join(paths[:MAX_KEYS_SHOWN])
    return shown + (f", and {len(paths) - MAX_KEYS_SHOWN} more" if len(paths) > MAX_KEYS_SHOWN else "")


def unread_note(paths: list[str]) -> str:
    """The import note naming the keys it left out."""
    return (
        f"{len(paths)} key(s) in the data not read (no field for them here), left out of the graph: {named_keys(paths)}"
    )


def read_types(path: str | Path) -> dict[str, str]:
    data = _read_option_file(path, "type list")
    if not isinstance(data, Mapping) or not data:
        raise GraphError(f"type list {path}: expected {{object: [class, ...], asset: [class, ...]}}")
    out: dict[str, str] = {}
    for node_type, classes in data.items():
        if node_type in _LABEL_KEYS:
            continue
        if node_type not in ("object", "asset"):
            raise GraphError(f"type list {path}: '{node_type}' is not a type that can be set (object or asset)")
        if not isinstance(classes, list) or not all(isinstance(c, str) and c for c in classes):
            raise GraphError(f"type list {path}: {node_type} must list class names")
        for cls in classes:
            if out.get(cls, node_type) != node_type:
                raise GraphError(f"type list {path}: class '{cls}' is listed as both object and asset")
            out[cls] = str(node_type)
    return out


#: Sections of a type list that name numeric labels (read by read_labels) rather than type classes.
_LABEL_KEYS = {"labels": "objects", "room_labels": "rooms"}


def read_labels(path: str | Path) -> dict[str, dict[int, str]]:
    """The labels / room_labels sections of a type list: {number: class name}, for graphs labelled by number."""
    data = _read_option_file(path, "type list")
    out: dict[str, dict[int, str]] = {}
    if not isinstance(data, Mapping):
        return out
    for key, which in _LABEL_KEYS.items():
        raw = data.get(key)
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            raise GraphError(f"type list {path}: {key} must map label numbers to class names ({{3: cup}})")
        bad = [repr(k) for k, v in raw.items() if _label_number(k) is None or not (isinstance(v, str) and v.strip())]
        if bad:
            shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
            raise GraphError(
                f"type list {path}: {key} must map label numbers to class names ({{3: cup}}); not so: {shown}"
            )
        out[which] = {_label_number(k) or 0: str(v) for k, v in raw.items()}
    return out


def _label_number(key: Any) -> int | None:
    """A label number: an int, or digits as a JSON file must write its keys (`"3"`)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key.strip().isdigit() and key.strip().isascii():
        return int(key.strip())
    return None


def _not_finite(position: Any) -> bool:
    """A position of numbers one of which is NaN or infinite (a malformed one is the loader's to refuse)."""
    if not isinstance(position, (list, tuple)):
        return False
    numbers = [v for v in position if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return len(numbers) == len(position) and not all(math.isfinite(v) for v in numbers)


def _problem_text(source: str, problems: list[str], limit: int) -> str:
    shown = "; ".join(problems[:limit])
    more = f"; and {len(problems) - limit} more" if len(problems) > limit else ""
    if len(problems) == 1:
        return f"{source}: {shown}"
    return f"{source}: {len(problems)} problems: {shown}{more}"


# ----------------------------------------------------------------------------- builder
@dataclass
class Imported:
    """An imported graph and what the importer did that the data did not say (invented links, no agent)."""

    graph: SceneGraph
    notes: list[str] = field(default_factory=list)
    format: str = ""
    #: The source's id of each imported node -> our id (written beside the graph by `sayplan env import`).
    id_map: dict[str, str] = field(default_factory=dict)
    #: Navigation links the importer invented (the data has none); floors it could not join, as groups.
    synthetic_links: int = 0
    apart_floors: list[list[str]] = field(default_factory=list)
    #: Keys of the data no field here reads, by where they are (`rooms.kitchen.colour`): named in `notes` too.
    unread_keys: list[str] = field(default_factory=list)
    #: What the data held that the graph leaves out, counted by kind (`objects`, `links`, `agent poses`, ...):
    #: each is named in `notes` too. Kept plus dropped is what the data held.
    dropped: dict[str, int] = field(default_factory=dict)

    def synthetic_warning(self) -> str:
        """One line for stderr when links are invented, '' when every link is from the data or a file."""
        if not self.synthetic_links:
            return ""
        line = (
            f"{self.synthetic_links} navigation link(s) are synthetic: the data has no room connectivity, so a "
            "hallway pose per floor was joined to each of its rooms (plans and path lengths on it are not the "
            "building's)"
        )
        if self.apart_floors:
            line += f"; floors left unlinked: {' | '.join(', '.join(g) for g in self.apart_floors)}"
        return line + "; --connectivity FILE loads real doors"

    def summary(self) -> str:
        counts = ", ".join(
            f"{self.graph.count(t)} {t}s" for t in ("floor", "room", "pose", "asset", "object") if self.graph.count(t)
        )
        return "; ".join([f"{len(self.graph)} nodes ({counts})", *self.notes])


class Builder:
    """Collects native nodes/edges and every problem found; `build` applies the shared options and validates."""

    def __init__(self, name: str, source: str, options: ImportOptions | None = None) -> None:
        self.name = name
        self.source = source
        self.options = options or ImportOptions()
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.types: dict[str, str] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        #: Ids listed more than once (reported once; their edges are not checked again).
        self.duplicates: set[str] = set()
        #: Nodes whose missing place the importer already reported in its own words.
        self.unplaced: set[str] = set()
        #: What to add to an unplaced asset or object (by type), in the format's own terms.
        self.place_hint: dict[str, str] = {}
        #: Formats that carry no connectivity set this, so links are invented (or read from the option).
        self.has_connectivity = True
        #: Rooms the data places on more floors than their own (room id -> floor ids): they may join floors.
        self.also_on: dict[str, list[str]] = {}
        #: How many navigation links invent_connectivity added; groups of floors it could not join.
        self.synthetic_links = 0
        self.apart_floors: list[list[str]] = []
        #: Source id (as the source spells it) -> our id, for importers that rename; kept for nodes in the graph.
        self.id_map: dict[str, str] = {}
        #: Nodes the importer made up (the synthetic hallway poses): never offered as a "closest" id.
        self.invented: set[str] = set()
        #: Ids refused as ids (too long): named once, in that problem; no other problem repeats them.
        self.refused_ids: set[str] = set()
        #: Nodes whose position in the data is not finite (NaN, inf): kept without it, named in one note.
        self.no_position: list[str] = []
        #: Keys of the data no field reads (see account_keys): named in a note, or with the problems.
        self.unread_keys: list[str] = []
        #: What the graph leaves out, counted by kind (the importer names each in a note).
        self.dropped: dict[str, int] = {}
        #: Advice already given with a refused key (said once per import).
        self.advice_said: set[str] = set()

    def problem(self, message: str) -> None:
        self.problems.append(message)

    def keys(
        self, where: str, item: Mapping[Any, Any], known: Collection[str], advice: Mapping[str, str] | None = None
    ) -> None:
        """Account for every key of `item` (see account_keys): refusals become problems, the rest is named."""
        refusals, unread = account_keys(where, item, known, advice, self.advice_said)
        self.problems.extend(refusals)
        self.unread_keys.extend(unread)

    def drop(self, kind: str, count: int = 1) -> None:
        """Count `count` of `kind` (`objects`, `links`, ...) the graph leaves out; the importer names them."""
        if count:
            self.dropped[kind] = self.dropped.get(kind, 0) + count

    def node(self, node_id: str, node_type: str, **fields: Any) -> dict[str, Any] | None:
        if not isinstance(node_id, str) or not node_id.strip():
            self.problem(f"a {node_type} has no usable id ({node_id!r})")
            return None
        if node_id in self.types:
            if node_id not in self.duplicates:
                self.duplicates.add(node_id)
                self.problem(f"duplicate node id '{node_id}' (listed more than once)")
            return None
        item: dict[str, Any] = {"id": node_id, "type": node_type}
        item.update({k: v for k, v in fields.items() if v not in (None, [], {}, "")})
        if _not_finite(item.get("position")):  # a sensor's failed estimate: the node is still real, the place not
            del item["position"]
            self.no_position.append(node_id)
        try:  # what the native loader would stop at, one node at a time (a bad position, say)
            node_from_dict(item)
        except GraphError as exc:
            self.problem(str(exc))
            if str(exc).startswith("node id "):
                self.refused_ids.add(node_id)
        self.nodes.append(item)
        self.types[node_id] = node_type
        return item

    def str_list(self, node_id: str, name: str, raw: Any, fix: Mapping[str, str] | None = None) -> list[str]:
        """A field holding names (states, affordances): one string or a list of strings; anything else is a
        problem naming the node, the field and what it must be. `fix` renames entries (turned_on -> on)."""
        if raw is None or raw == "":
            return []
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            self.problem(f"node '{node_id}': '{name}' must be a string or a list of strings, got {raw!r}")
            return []
        out = [v.strip() for v in items if v.strip()]
        return [fix.get(v, v) for v in out] if fix else out

    def child(self, child: str, relation: str, parent: str) -> None:
        self.edges.append({"source": child, "relation": relation, "target": parent})

    def link(self, a: str, b: str, weight: float | None = None) -> None:
        edge: dict[str, Any] = {"source": a, "relation": "connected_to", "target": b}
        if weight is not None:
            edge["weight"] = weight
        self.edges.append(edge)

    def like(self, name: str, nav: bool = False) -> str:
        """' (closest: ...)' among the nodes (rooms and poses only when `nav`); when none is alike, the first ids
        of those, so a mistyped id always comes with ids there are."""
        pool = sorted(n for n, t in self.types.items() if (not nav or t in NAV_TYPES) and n not in self.invented)
        return closest(name, pool, fallback="rooms and poses" if nav else "ids")

    def parents(self) -> dict[str, tuple[str, str]]:
        return {e["source"]: (e["target"], e["relation"]) for e in self.edges if e["relation"] != "connected_to"}

    # ------------------------------------------------------------------ shared steps
    def _override_types(self) -> None:
        wanted = self.options.types
        if not wanted:
            return
        parents = self.parents()
        changed: dict[str, int] = {}
        classes = {class_of(node_id) for node_id in self.types}
        unused = sorted(cls for cls in wanted if cls not in classes)
        for item in self.nodes:
            new = wanted.get(class_of(item["id"]))
            if new is None or item["type"] == new or item["type"] not in ("object", "asset"):
                continue
            item["type"] = self.types[item["id"]] = new
            changed[new] = changed.get(new, 0) + 1
            if new == "object":
                give_pickup(item)
            if new == "asset":  # an asset stands in a room: move it out of what held it
                holder, relation = parents.get(item["id"], (None, ""))
                room = self._room_of(item["id"], parents)
                self.edges = [
                    e for e in self.edges if not (e["source"] == item["id"] and e["relation"] != "connected_to")
                ]
                if room is not None:
                    self.child(item["id"], "in", room)
                    if relation == "inside_hand":
                        self.notes.append(
                            f"'{item['id']}' was held by the agent; typed asset by the type list, it now stands "
                            f"in the agent's room '{room}' and the agent holds nothing"
                        )
                elif holder is not None:
                    self.unplaced.add(item["id"])
                    self.problem(
                        f"'{item['id']}' is typed asset by the type list, but what held it ('{holder}') is in no "
                        "room, so it cannot stand in one"
                    )
                parents = self.parents()
            else:
                for edge in self.edges:
                    if (
                        edge["source"] == item["id"]
                        and edge["relation"] == "in"
                        and self.types.get(edge["target"]) != "room"
                    ):
                        edge["relation"] = "ontop_of"
        for new, count in sorted(changed.items()):
            self.notes.append(f"{count} node(s) typed {new} by the type list")
        if unused:
            named = ", ".join(f"{cls}{closest(cls, sorted(classes))}" for cls in unused)
            self.notes.append(f"type list class(es) matching no node (a typo?): {named}")

    def _room_of(self, node_id: str, parents: Mapping[str, tuple[str, str]]) -> str | None:
        """The room a node is in, through what holds it; a held node is in the agent's room (where it is, or
        the room of the pose where it is)."""
        seen = {node_id}
        current = parents.get(node_id, (None, ""))[0]
        while current is not None and current not in seen:
            if self.types.get(current) == "room":
                return str(current)
            seen.add(current)
            if self.types.get(current) == "agent":
                agent = next((n for n in self.nodes if n["id"] == current), {})
                location = (agent.get("attributes") or {}).get("location")
                current = location if isinstance(location, str) and self.types.get(location) in NAV_TYPES else None
                continue
            current = parents.get(current, (None, ""))[0]
        return None

    def _check_references(self) -> None:
        """Problems the native loader would stop at one by one: dangling ends, unknown relations, wrong parents,
        two parents, unplaced assets and objects, where the agent is and what it holds."""
        parents: dict[str, str] = {}
        for edge in self.edges:
            src, dst, rel = edge["source"], edge["target"], edge["relation"]
            what = f"link {src}<->{dst}" if rel == "connected_to" else f"'{src}' {rel} '{dst}'"
            missing = [end for end in (src, dst) if end not in self.types]
            if missing and rel == "connected_to":
                self.problem(f"{what} refers to '{missing[0]}', which does not exist{self.like(missing[0], True)}")
                continue
            if missing:
                if src in self.types:
                    self.problem(f"'{src}' is {rel} '{dst}', which does not exist{self.like(dst)}")
                    parents.setdefault(src, dst)
                else:
                    self.problem(f"'{src}', placed {rel} '{dst}', does not exist{self.like(src)}")
                continue
            if rel == "connected_to":
                for end in (src, dst):
                    if self.types[end] not in NAV_TYPES:
                        self.problem(f"{what}: '{end}' is {a_or_an(self.types[end])}; only rooms and poses link")
                continue
            if src in self.duplicates:  # reported as a duplicate id; its copies' places say nothing more
                parents.setdefault(src, dst)
                continue
            if rel not in HIERARCHY_RELATIONS:
                known = ", ".join(sorted(HIERARCHY_RELATIONS))
                self.problem(f"{what}: unknown relation '{rel}' (expected one of {known})")
                parents.setdefault(src, dst)
                continue
            if src in parents:
                self.problem(f"'{src}' is in two places: '{parents[src]}' and '{dst}'")
                continue
            parents[src] = dst
            child_type, parent_type = self.types[src], self.types[dst]
            if parent_type not in ALLOWED_PARENTS.get(child_type, frozenset()):
                self.problem(f"'{src}' ({child_type}) cannot be placed under '{dst}' ({parent_type})")
                continue
            try:
                check_parent(Node(src, child_type), Node(dst, parent_type), rel)
            except GraphError as exc:
                self.problem(str(exc))
        no_rooms = "room" not in self.types.values()  # said once by `build`, not once per asset and object
        for node_id, node_type in self.types.items():
            if no_rooms:
                break
            if node_type in ("asset", "object") and node_id not in parents and node_id not in self.unplaced:
                hint = f" ({self.place_hint[node_type]})" if node_type in self.place_hint else ""
                self.problem(f"{node_type} '{node_id}' is in no room: nothing places it{hint}")
        self._check_agent(parents)

    def _check_agent(self, parents: Mapping[str, str]) -> None:
        agents = [n for n in self.nodes if n["type"] == "agent"]
        if len(agents) > 1:
            self.problem(f"more than one agent: {', '.join(str(a['id']) for a in agents)}")
        for agent in agents:
            location = (agent.get("attributes") or {}).get("location")
            found = self.types.get(location) if isinstance(location, str) else None
            if location is not None and found not in NAV_TYPES:
                why = f"a {found}, not a room or pose" if found else f"which does not exist{self.like(location, True)}"
                self.problem(f"the agent '{agent['id']}' is at '{location}', {why}")
            held = sorted(child for child, parent in parents.items() if parent == agent["id"])
            if len(held) > 1:
                self.problem(f"the agent '{agent['id']}' holds more than one object: {', '.join(held)}")

    def _connect(self) -> None:
        links = self.options.connectivity
        if links is not None:
            for a, b, weight in links:
                self.link(a, b, weight)
            linked = {e for a, b, _ in links for e in (a, b)}
            alone = [n for n, t in self.types.items() if t == "room" and n not in linked]
            note = f"{len(links)} link(s) from the connectivity file"
            named = ", ".join(alone[:MAX_PROBLEMS]) + (
                f", and {len(alone) - MAX_PROBLEMS} more" if len(alone) > MAX_PROBLEMS else ""
            )
            self.notes.append(note + (f"; {len(alone)} room(s) left unlinked (unreachable): {named}" if alone else ""))
            return
        if self.has_connectivity:
            return
        self.invent_connectivity()

    def invent_connectivity(self) -> None:
        """The data has no room links: add synthetic ones (see synthetic_links.invent)."""
        invent(self)

    def _place_agent(self) -> None:
        where = self.options.agent_at
        agents = [n for n in self.nodes if n["type"] == "agent"]
        if where:
            if self.types.get(where) not in NAV_TYPES:
                found = self.types.get(where)
                self.problem(
                    f"--agent-at {where}: "
                    + (
                        f"it is {a_or_an(found)}, not a room or pose"
                        if found
                        else f"no such node{self.like(where, True)}"
                    )
                )
                return
            if agents:
                agents[0].setdefault("attributes", {})["location"] = where
            else:
                self.node("agent", "agent", attributes={"location": where})
            self.notes.append(f"agent placed at {where}")
        elif not agents:
            self.notes.append(
                "no agent in the data: to plan on this graph, import it again with --agent-at <room|pose>"
            )
        elif not agents[0].get("attributes", {}).get("location"):
            self.notes.append("the agent has no location: import it again with --agent-at <room|pose>")

    def build(self, expected: str) -> Imported:
        """Apply the options, check, and load. expected: what the format holds, for the empty-input error."""
        if not self.nodes and not self.problems:
            unread = f"; key(s) not read: {named_keys(self.unread_keys)}" if self.unread_keys else ""
            raise GraphError(f"{self.source}: no nodes found; expected {expected}{unread}")
        self._connect()
        self._place_agent()
        self._override_types()  # after the agent is placed: a held node made an asset goes to the agent's room
        self._check_references()
        if "room" not in self.types.values():
            self.problems.insert(0, f"no rooms found; expected {expected}")
        self.problems = [p for p in self.problems if not any(bad in p for bad in self.refused_ids)]
        if self.problems:
            if self.unread_keys:  # what was not read may be why: named among the first lines
                self.problems.insert(min(1, len(self.problems)), f"key(s) not read: {named_keys(self.unread_keys)}")
            raise GraphError(_problem_text(self.source, self.problems, self.options.max_problems))
        if self.unread_keys:
            self.notes.append(unread_note(self.unread_keys))
        if self.no_position:
            shown = ", ".join(self.no_position[:10]) + (
                f" and {len(self.no_position) - 10} more" if len(self.no_position) > 10 else ""
            )
            self.notes.append(
                f"{len(self.no_position)} node(s) with a non-finite position in the data (NaN or inf) kept without "
                f"a position: {shown}"
            )
        data = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": self.name}
        data["nodes"] = self.nodes
        data["edges"] = self.edges
        graph = graph_from_dict(data, source=self.source, require_agent=False)
        ids = {k: v for k, v in self.id_map.items() if v in graph.nodes and v not in self.invented}
        return Imported(
            graph,
            self.notes,
            id_map=ids,
            synthetic_links=self.synthetic_links,
            apart_floors=self.apart_floors,
            unread_keys=list(self.unread_keys),
            dropped=dict(self.dropped),
        )
