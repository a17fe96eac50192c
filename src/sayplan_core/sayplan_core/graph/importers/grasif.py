"""LookPlanGraph / GRASIF-style JSON, in the three layouts that appear in LookPlanGraph's paper and data.

- grouped: `places`/`rooms`, `assets`, `objects`, `agent` (lists with `id`, or keyed by id), optionally under
  `nodes` (the paper's appendix A memory graph);
- node list: one flat list of nodes named `[class, index]` (or a string id) with `type` (room/place, asset,
  object, agent), `place`, `relation` + `related_to`, `location`, `holding`, `states`, `affordances`,
  `properties` (LookPlanGraph's data and its VLM output, appendix B);
- task list: a list (or `{"tasks": [...]}`) of task scenes, each with an `instruction` and `init` and `goal`
  scenes in either layout above; `import_grasif_tasks` reads them, the goal scene becoming a goal graph.

GRASIF scenes have no room connectivity; the builder adds it (see common.Builder.invent_connectivity) or
reads it from the connectivity option.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sayplan_core.graph.importers.common import (
    MAX_PROBLEMS,
    Builder,
    Imported,
    ImportOptions,
    account_keys,
    at,
    attributes,
    closest,
    load_json,
    norm_relation,
    unread_note,
    unread_text,
)
from sayplan_core.graph.model import GraphError, SceneGraph

EXPECTED = (
    "GRASIF JSON: 'places'/'rooms', 'assets', 'objects' and 'agent' (grouped or keyed by id), a list of nodes "
    "with 'type' and 'name' [class, index], or a list of tasks with 'init' and 'goal' scenes"
)
_GROUP_KEYS = ("places", "place", "rooms", "room", "assets", "asset", "objects", "object", "agent")
_STATE_NAMES = {"turned_on": "on", "turned_off": "off", "switched_on": "on", "switched_off": "off"}
_INIT_KEYS = ("init", "initial", "init_graph", "initial_graph")
_GOAL_KEYS = ("goal", "goal_graph")
#: The sections of a grouped scene, each under any of its names (every one given is read).
_ROOMS, _ASSETS, _OBJECTS = ("places", "place", "rooms", "room"), ("assets", "asset"), ("objects", "object")
#: The keys read of each kind of node (a node list's items also have 'type').
_NODE_KEYS = {"id", "name", "type", "properties", "position"}
_KEYS = {
    "room": _NODE_KEYS,
    "asset": _NODE_KEYS | {"states", "affordances", "located", "place", "related_to"},
    "object": _NODE_KEYS | {"states", "affordances", "related_to", "relation", "place"},
    "agent": {"id", "name", "type", "location", "holding"},
}
_ALL_KEYS = set().union(*_KEYS.values())
_SCENE_KEYS = {"scene", "name"}
_TASK_KEYS = {"id", "task_id", "instruction", "task", *_INIT_KEYS, *_GOAL_KEYS}
#: What a refusal of a key holding nodes or links adds, by a word in the key.
ADVICE = {
    word: "GRASIF scenes hold no room links: give them with --connectivity FILE (a YAML list of 'room room' pairs)"
    for word in ("neighbo", "connect", "link", "edge", "adjacen", "door")
} | {
    word: "GRASIF lists them in the scene's 'assets'/'objects', each naming its room with 'place' (an object "
    "may name what holds it with 'related_to')"
    for word in ("object", "asset", "item")
}


def grasif_id(raw: Any) -> str:
    """`["fridge", 1]` -> `fridge-1`; a string id stays as it is."""
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        return f"{raw[0]}-{raw[1]}"
    return "" if raw is None else str(raw)


def _sid(b: Builder, raw: Any) -> str:
    """Our id for a source id, noted in the builder's id map under the source's own spelling (`["fridge", 1]`)."""
    our = grasif_id(raw)
    if our:
        key = raw if isinstance(raw, str) else json.dumps(raw, default=str)
        b.id_map.setdefault(key, our)
    return our


def layout(data: Any) -> str | None:
    """Which GRASIF layout `data` is in: grouped, nodes, tasks, or None when it is none of them."""
    items = data.get("tasks") if isinstance(data, Mapping) else data
    if isinstance(items, list) and any(isinstance(t, Mapping) and any(k in t for k in _INIT_KEYS) for t in items):
        return "tasks"
    if isinstance(data, list) and data and all(isinstance(t, Mapping) for t in data):
        if any("type" in item for item in data):
            return "nodes"
        return None
    if isinstance(data, Mapping):
        nodes = data.get("nodes")
        if isinstance(nodes, list) and any(isinstance(n, Mapping) and "type" in n for n in nodes):
            return "nodes"
        root = nodes if isinstance(nodes, Mapping) else data
        if any(k in root for k in _GROUP_KEYS):
            return "grouped"
    return None


class _Scene:
    """One GRASIF scene into a Builder: rooms, assets, objects and the agent, whichever layout they came in."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.implicit_rooms: list[str] = []
        self.holding: str | None = None
        self.agent: str | None = None
        self.pending_objects: list[tuple[str, Mapping[str, Any]]] = []

    def room(self, room_id: str, item: Mapping[str, Any], where: str) -> None:
        self.b.keys(where, item, _KEYS["room"], ADVICE)
        self.b.node(room_id, "room", attributes=attributes(item.get("properties")), position=item.get("position"))

    def asset(self, asset_id: str, item: Mapping[str, Any], where: str) -> None:
        self.b.keys(where, item, _KEYS["asset"], ADVICE)
        self.b.node(
            asset_id,
            "asset",
            states=self.b.str_list(asset_id, "states", item.get("states"), _STATE_NAMES),
            affordances=self.b.str_list(asset_id, "affordances", item.get("affordances")),
            attributes=attributes(item.get("properties")),
            position=item.get("position"),
        )
        room = _sid(self.b, item.get("located", item.get("place", item.get("related_to"))))
        if not room:
            self.b.problem(f"asset '{asset_id}' has no place ('place' or 'located')")
            self.b.unplaced.add(asset_id)
            return
        self.b.child(asset_id, "in", self.room_named(room))

    def room_named(self, room_id: str) -> str:
        """A room a node names; created when the data never lists it (node lists name rooms only by place)."""
        if room_id not in self.b.types and room_id not in self.implicit_rooms:
            self.implicit_rooms.append(room_id)
        return room_id

    def agent_node(self, item: Mapping[str, Any], where: str) -> None:
        self.b.keys(where, item, _KEYS["agent"], ADVICE)
        agent_id = _sid(self.b, item.get("name", item.get("id", "agent"))) or "agent"
        location = _sid(self.b, item.get("location"))
        self.holding = _sid(self.b, item.get("holding")) or None
        self.agent = agent_id
        self.b.node(agent_id, "agent", attributes={"location": self.room_named(location)} if location else {})

    def obj(self, obj_id: str, item: Mapping[str, Any], where: str) -> None:
        self.b.keys(where, item, _KEYS["object"], ADVICE)
        self.b.node(
            obj_id,
            "object",
            states=self.b.str_list(obj_id, "states", item.get("states"), _STATE_NAMES),
            affordances=self.b.str_list(obj_id, "affordances", item.get("affordances")),
            attributes=attributes(item.get("properties")),
            position=item.get("position"),
        )
        self.pending_objects.append((obj_id, item))

    def finish(self) -> None:
        for _, item in self.pending_objects:  # every node is known by now, so a place naming one is no new room
            if not _sid(self.b, item.get("related_to")) and _sid(self.b, item.get("place")):
                self.room_named(_sid(self.b, item.get("place")))
        declared = "room" in self.b.types.values()
        if not declared:  # a scene that lists no rooms names them by place; one that lists them must list all
            for room_id in self.implicit_rooms:
                self.b.node(room_id, "room")
            if self.implicit_rooms:
                self.b.notes.append(f"{len(self.implicit_rooms)} room(s) known only from 'place'/'location'")
        for obj_id, item in self.pending_objects:
            if self.holding == obj_id:
                continue
            parent = _sid(self.b, item.get("related_to"))
            if parent:
                self.b.child(obj_id, norm_relation(str(item.get("relation") or "ontop_of")), parent)
            elif item.get("place") is not None:
                self.b.child(obj_id, "in", _sid(self.b, item.get("place")))
            else:
                self.b.problem(f"object '{obj_id}' has no 'related_to' and no 'place'")
                self.b.unplaced.add(obj_id)
        if self.holding is not None:
            if self.holding not in self.b.types:
                objects = sorted(n for n, t in self.b.types.items() if t == "object")
                self.b.problem(
                    f"the agent holds '{self.holding}', which is not in the scene"
                    + closest(self.holding, objects, fallback="objects")
                )
            elif self.agent is not None:
                self.b.child(self.holding, "inside_hand", self.agent)


def _items(section: Any, b: Builder, what: str) -> list[tuple[str, Mapping[str, Any], str]]:
    """The nodes of a section (a list with ids, or keyed by id), each with where it is for messages."""
    if section is None:
        return []
    if isinstance(section, Mapping):
        out = []
        for key, value in section.items():
            if value is not None and not isinstance(value, Mapping):  # `"kitchen-1": "big"` says something unread
                b.problem(f"{at(what, key)} must be an object of fields (or {{}}), got {value!r:.60}")
                continue
            out.append((_sid(b, str(key)), value or {}, at(what, key)))
        return out
    if isinstance(section, list):
        out = []
        for index, item in enumerate(section):
            if not isinstance(item, Mapping) or not grasif_id(item.get("id", item.get("name"))):
                b.problem(f"{what}[{index}] needs an 'id'" + unread_text(f"{what}[{index}]", item, _ALL_KEYS))
                continue
            out.append((_sid(b, item.get("id", item.get("name"))), item, f"{what}[{index}]"))
        return out
    b.problem(f"'{what}' must be an object or a list")
    return []


def _section(root: Mapping[str, Any], names: tuple[str, ...], b: Builder, where: str) -> list[Any]:
    """The nodes under every name of one section (`places` and `rooms` both, when a scene has both)."""
    return [found for name in names if name in root for found in _items(root[name], b, at(where, name))]


def _grouped(data: Mapping[str, Any], b: Builder) -> None:
    nodes = data.get("nodes")
    root = nodes if isinstance(nodes, Mapping) else data
    where = "nodes" if isinstance(nodes, Mapping) else ""
    if isinstance(nodes, Mapping):
        b.keys("", data, {"nodes", *_SCENE_KEYS}, ADVICE)
    b.keys(where, root, {*_ROOMS, *_ASSETS, *_OBJECTS, "agent", *(() if where else _SCENE_KEYS)}, ADVICE)
    scene = _Scene(b)
    for room_id, item, at_ in _section(root, _ROOMS, b, where):
        scene.room(room_id, item, at_)
    for asset_id, item, at_ in _section(root, _ASSETS, b, where):
        scene.asset(asset_id, item, at_)
    agent_raw = root.get("agent")
    agent_at = at(where, "agent")
    if isinstance(agent_raw, list):
        if len(agent_raw) > 1:
            b.problem(f"{agent_at}: {len(agent_raw)} agents listed; a scene has one")
        agent_raw = agent_raw[0] if agent_raw else None
        agent_at += "[0]"
    if isinstance(agent_raw, Mapping):
        scene.agent_node(agent_raw, agent_at)
    elif agent_raw is not None:
        b.problem(f"{agent_at} must be an object (id, location, holding), got {agent_raw!r:.60}")
    for obj_id, item, at_ in _section(root, _OBJECTS, b, where):
        scene.obj(obj_id, item, at_)
    scene.finish()


def _node_list(items: list[Any], b: Builder, where: str) -> None:
    scene = _Scene(b)
    by_type: dict[str, list[tuple[str, Mapping[str, Any], str]]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            b.problem(f"{where}[{index}] must be an object")
            continue
        node_id = _sid(b, item.get("name", item.get("id")))
        node_type = str(item.get("type", "")).strip().lower()
        node_type = "room" if node_type == "place" else node_type
        if not node_id:
            b.problem(
                f"{where}[{index}] needs a 'name' ([class, index]) or an 'id'"
                + unread_text(f"{where}[{index}]", item, _ALL_KEYS)
            )
        elif node_type not in ("room", "asset", "object", "agent"):
            b.problem(
                f"node '{node_id}' has type {item.get('type')!r} (expected room, place, asset, object or agent)"
                + unread_text(f"{where}[{index}]", item, _ALL_KEYS)
            )
        else:
            by_type.setdefault(node_type, []).append((node_id, item, f"{where}[{index}]"))
    for node_id, item, at_ in by_type.get("room", []):
        scene.room(node_id, item, at_)
    for node_id, item, at_ in by_type.get("asset", []):
        scene.asset(node_id, item, at_)
    for _, item, at_ in by_type.get("agent", [])[:1]:
        scene.agent_node(item, at_)
    for node_id, _, _ in by_type.get("agent", [])[1:]:
        b.problem(f"a second agent '{node_id}'")
    for node_id, item, at_ in by_type.get("object", []):
        scene.obj(node_id, item, at_)
    scene.finish()


def _scene_builder(data: Any, source: str, name: str, options: ImportOptions | None) -> Builder:
    kind = layout(data)
    if kind is None:
        root = data.get("nodes") if isinstance(data, Mapping) and isinstance(data.get("nodes"), Mapping) else data
        known = {*_ROOMS, *_ASSETS, *_OBJECTS, "agent", *(() if root is not data else ("nodes", *_SCENE_KEYS))}
        raise GraphError(f"{source}: not {EXPECTED}{unread_text('nodes' if root is not data else '', root, known)}")
    if kind == "tasks":
        count = len(data["tasks"] if isinstance(data, Mapping) else data)
        raise GraphError(
            f"{source}: holds {count} task scene(s), not one scene; import them into a folder "
            "(sayplan env import FILE FOLDER) or read them with import_grasif_tasks"
        )
    scene_name = name or (str(data.get("scene", data.get("name", ""))) if isinstance(data, Mapping) else "")
    if not scene_name:
        scene_name = Path(source).stem if source != "<dict>" else "grasif"
    b = Builder(scene_name, source, options)
    b.has_connectivity = False
    if kind == "grouped":
        _grouped(data, b)
    elif isinstance(data, list):
        _node_list(data, b, "nodes")
    else:
        b.keys("", data, {"nodes", *_SCENE_KEYS}, ADVICE)
        _node_list(data["nodes"], b, "nodes")
    return b


def import_grasif(
    path_or_data: str | Path | Mapping[str, Any] | list[Any], options: ImportOptions | None = None, name: str = ""
) -> Imported:
    data, source = load_json(path_or_data)
    imported = _scene_builder(data, source, name, options).build(EXPECTED)
    imported.format = "grasif"
    return imported


def import_grasif_json(
    path_or_data: str | Path | Mapping[str, Any] | list[Any], name: str = "", options: ImportOptions | None = None
) -> SceneGraph:
    return import_grasif(path_or_data, options, name).graph


Links = tuple[tuple[str, str, float | None], ...]


@dataclass
class GrasifTask:
    id: str
    instruction: str
    init: Imported
    goal: Imported


@dataclass(frozen=True)
class PerTask:
    """Options given per task (files keyed by task id): a task not listed gets none (links are invented, the
    scene's own agent stays)."""

    connectivity: Mapping[str, Links] | None = None
    agent_at: Mapping[str, str] | None = None


@dataclass
class TaskImport:
    """A task list read as far as it goes: the tasks that import, and each skipped one's problems by task id."""

    tasks: list[GrasifTask] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def skipped_text(self, limit: int = MAX_PROBLEMS) -> list[str]:
        """One line per skipped task: `task 'id': problem; problem`."""
        lines = []
        for task_id, problems in self.skipped.items():
            more = f"; and {len(problems) - limit} more" if len(problems) > limit else ""
            lines.append(f"task '{task_id}': " + "; ".join(problems[:limit]) + more)
        return lines


def _scene(
    raw: Any, source: str, task_id: str, options: ImportOptions, goal: bool
) -> tuple[Imported | None, list[str]]:
    """One scene of a task and every problem in it (prefixed by which scene it is)."""
    which = "goal scene" if goal else "start scene"
    try:
        b = _scene_builder(raw, source, task_id, options)
    except GraphError as exc:
        return None, [f"{which}: {str(exc).removeprefix(source + ': ')}"]
    if goal and options.connectivity is not None:  # a goal scene lists what the goal is about, not every room
        kept = tuple(link for link in options.connectivity if link[0] in b.types and link[1] in b.types)
        b.options = replace(b.options, connectivity=kept)
    try:
        imported = b.build(EXPECTED)
    except GraphError as exc:
        return None, [f"{which}: {p}" for p in b.problems] or [f"{which}: {str(exc).removeprefix(source + ': ')}"]
    imported.format = "grasif"
    return imported, []


def _unreachable(init: SceneGraph, goal: SceneGraph) -> list[str]:
    """What a goal scene names that its start scene lacks: no plan can make rooms, assets or objects."""
    problems = []
    for node_type in ("room", "asset", "object"):
        missing = sorted(n for n in goal.ids_of_type(node_type) if n not in init.nodes)
        if missing:
            pool = init.ids_of_type(node_type)
            named = ", ".join(f"'{n}'{closest(n, pool, fallback=f'its {node_type}s')}" for n in missing)
            problems.append(
                f"the goal scene names {node_type}(s) the start scene lacks, so it cannot be reached: {named}"
            )
    return problems


def read_grasif_tasks(
    path_or_data: str | Path | Mapping[str, Any] | list[Any],
    options: ImportOptions | None = None,
    per_task: PerTask | None = None,
    action_set: str = "lookplangraph",
) -> TaskImport:
    """Every task of a GRASIF task list that imports; every other one skipped with all its problems, start and goal
    scene together, under its own id. Goal scenes become goal graphs. A goal the start cannot reach (rooms or
    objects it lacks; states, affordances or moves `action_set` cannot give) skips its task too. Raises only when
    the input is no task list (or the action set cannot be read)."""
    from sayplan_core.sim.action_set import ActionSetError, load_action_set
    from sayplan_core.sim.goal_reach import goal_problems

    try:
        actions = load_action_set(action_set)
    except ActionSetError as exc:
        raise GraphError(str(exc)) from None
    data, source = load_json(path_or_data)
    if layout(data) != "tasks":
        raise GraphError(f"{source}: not a GRASIF task list (a list, or 'tasks', of items with 'init' and 'goal')")
    items = data["tasks"] if isinstance(data, Mapping) else data
    stem = Path(source).stem if source != "<dict>" else "grasif"
    options = options or ImportOptions()
    per_task = per_task or PerTask()
    result = TaskImport()
    unread: list[str] = []
    if isinstance(data, Mapping):
        refusals, unread = account_keys("", data, {"tasks", *_SCENE_KEYS}, ADVICE)
        if refusals:
            raise GraphError(f"{source}: " + "; ".join(refusals))
    seen: set[str] = set()
    for index, item in enumerate(items):
        raw_id = item.get("id", item.get("task_id")) if isinstance(item, Mapping) else None
        task_id = str(raw_id) if raw_id not in (None, "") else f"{stem}-{index}"
        problems: list[str] = []
        if task_id in seen:
            task_id = f"{task_id} (tasks[{index}])"
            problems.append("the id is used by an earlier task (task ids must be unique)")
        seen.add(task_id)
        if not isinstance(item, Mapping):
            result.skipped[task_id] = ["must be an object with 'instruction', 'init' and 'goal'"]
            continue
        refusals, unread_here = account_keys(f"tasks[{index}]", item, _TASK_KEYS, ADVICE)
        problems.extend(refusals)
        unread.extend(unread_here)
        init = next((item[k] for k in _INIT_KEYS if k in item), None)
        goal = next((item[k] for k in _GOAL_KEYS if k in item), None)
        instruction = item.get("instruction", item.get("task", ""))
        if not isinstance(instruction, str) or not instruction.strip():
            problems.append("needs an 'instruction' (a non-empty string)")
        for key, scene in (("init", init), ("goal", goal)):
            if scene is None:
                problems.append(f"needs a '{key}' scene")
        start_options = options
        if per_task.connectivity is not None:
            start_options = replace(start_options, connectivity=per_task.connectivity.get(task_id))
        if per_task.agent_at is not None:
            start_options = replace(start_options, agent_at=per_task.agent_at.get(task_id, ""))
        # agent_at places the robot at the start; in a goal scene it would replace (or invent) where it must end
        goal_options = replace(start_options, agent_at="")
        first = second = None
        if init is not None:
            first, found = _scene(init, f"{source}: task '{task_id}' init", task_id, start_options, goal=False)
            problems.extend(found)
        if goal is not None:
            second, found = _scene(goal, f"{source}: task '{task_id}' goal", task_id, goal_options, goal=True)
            problems.extend(found)
        if first is not None and second is not None:
            problems.extend(_unreachable(first.graph, second.graph))
            problems.extend(goal_problems(first.graph, second.graph, actions))
        if problems or first is None or second is None:
            result.skipped[task_id] = problems
            continue
        if second.unread_keys:  # the start scene's are in its own notes
            result.notes.append(f"task '{task_id}' goal scene: {unread_note(second.unread_keys)}")
        result.tasks.append(GrasifTask(task_id, str(instruction), first, second))
    ids = [t.id for t in result.tasks] + list(result.skipped)
    for flag, keyed in (("--connectivity", per_task.connectivity), ("--agent-at", per_task.agent_at)):
        unknown = sorted(set(keyed or ()) - set(ids))
        if unknown:
            named = ", ".join(f"'{t}'{closest(t, ids, fallback='task ids')}" for t in unknown)
            result.notes.append(f"{flag} file names task(s) not in the list (a typo?): {named}")
    if not items:
        raise GraphError(f"{source}: the task list is empty")
    if unread:
        result.notes.insert(0, unread_note(unread))
    return result


def import_grasif_tasks(
    path_or_data: str | Path | Mapping[str, Any] | list[Any],
    options: ImportOptions | None = None,
    per_task: PerTask | None = None,
    action_set: str = "lookplangraph",
) -> list[GrasifTask]:
    """Every task scene of a GRASIF task list, or an error naming every bad task by id with all its problems
    (`read_grasif_tasks` keeps the good ones instead)."""
    result = read_grasif_tasks(path_or_data, options, per_task, action_set)
    if result.skipped:
        source = "<dict>" if isinstance(path_or_data, (Mapping, list)) else str(path_or_data)
        limit = (options or ImportOptions()).max_problems
        lines = result.skipped_text(limit)
        lines = lines[:limit] + ([f"and {len(lines) - limit} more task(s)"] if len(lines) > limit else [])
        raise GraphError(
            f"{source}: {len(result.skipped)} of {len(result.skipped) + len(result.tasks)} task(s) "
            "cannot be imported: " + " | ".join(lines)
        )
    return result.tasks
