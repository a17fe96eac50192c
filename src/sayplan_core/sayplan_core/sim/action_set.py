"""Action sets loaded from YAML: which actions exist, their targets, preconditions and effects.

Schema (every key but `actions` optional; `affordance` required on actions that take a target):

    name: my_set
    description: one line
    on_repeat: error        # a step that would change nothing (open on an open node, turn_on on a node
                            # that is on): `error` refuses it with feedback, `noop` accepts it with a note
    actions:
      goto:
        role: navigate      # what it does (sim/roles.py): feedback names the set's verb for a role, robots run an
                            # action by its role, and the loader checks the role against the effects
        targets: [room, pose]
        affordance: null    # what the target must afford: a name, a list of accepted names, or null for nothing
        preconditions: [reachable]
        effects: [move_agent]
        description: "Move the agent to any room node or pose node."
        on_repeat: error    # overrides the set's policy for this action

Three optional keys make a variant of a bundled set without copying it:

    extends: lookplangraph  # start from a bundled set's YAML; an action here is added, or, under a name the
                            # base has, changes only the keys it gives (a robot's own description)
    without: [turn_on, turn_off]  # the base's actions this set lacks (a robot without a toggle skill)
    auto_insert: [navigate, open]  # when a step fails for want of a step of one of these roles (the agent is in
                                   # another room, the target's container is closed), verify_plan inserts that step
                                   # and reports it (VerificationResult.inserted), as the source simulators do
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.graph.model import NODE_TYPES
from sayplan_core.sim.predicates import EFFECTS, PRECONDITIONS
from sayplan_core.sim.roles import RELATIONS, ROLES, roles_played

REPEAT_POLICIES = ("error", "noop")
_ACTION_KEYS = {"targets", "preconditions", "effects", "description", "optional_target", "affordance", "role"}
_ACTION_KEYS |= {"on_repeat"}
_SET_KEYS = {"name", "description", "actions", "on_repeat", "extends", "without", "auto_insert"}
#: How many sets an `extends` chain may pass through (a longer one is a loop or a mistake).
MAX_EXTENDS_DEPTH = 4
#: The largest action-set file read (a set is a page of YAML; anything bigger is a mistake).
MAX_FILE_BYTES = 1_000_000


class ActionSetError(ValueError):
    """An action-set file is malformed; the message names the action and the field."""


@dataclass(frozen=True)
class Clause:
    name: str
    arg: Any = None


@dataclass(frozen=True)
class ActionSpec:
    name: str
    targets: tuple[str, ...]
    preconditions: tuple[Clause, ...]
    effects: tuple[Clause, ...]
    description: str = ""
    optional_target: bool = False
    #: Affordance names any one of which the target must list; empty: the target needs none.
    affordances: tuple[str, ...] = ()
    role: str = ""
    on_repeat: str = "error"

    @property
    def takes_target(self) -> bool:
        return bool(self.targets)

    @property
    def relation(self) -> str:
        """Where a put or look acts on its target: `ontop_of` or `inside_of` (from its effect's argument)."""
        for clause in self.effects:
            if clause.name in ("place_held", "reveal") and clause.arg in RELATIONS:
                return str(clause.arg)
        return "ontop_of"


@dataclass(frozen=True)
class ActionSet:
    name: str
    actions: Mapping[str, ActionSpec] = field(default_factory=dict)
    description: str = ""
    on_repeat: str = "error"
    #: Roles (navigate, open, access) whose missing step verify_plan inserts instead of refusing the plan.
    auto_insert: tuple[str, ...] = ()

    def __contains__(self, action: object) -> bool:
        return action in self.actions

    def names(self) -> list[str]:
        return list(self.actions)

    def role(self, action: str) -> str:
        """The role `action` plays ('' for an action the set lacks or one that declares none)."""
        spec = self.actions.get(action)
        return spec.role if spec is not None else ""

    def verb(self, role: str) -> str | None:
        """The action playing `role` in this set, if any (the first, for a role several actions play)."""
        for spec in self.actions.values():
            if spec.role == role:
                return spec.name
        return None

    def walks_through_poses(self) -> str | None:
        """None when the set's navigate action can name pose nodes (so a plan can spell out every hop, as strict
        navigation and path expansion need); else why not."""
        verb = self.verb("navigate")
        if verb is None:
            return f"the {self.name} action set has no navigate action"
        if "pose" not in self.actions[verb].targets:
            return f"{self.name}'s {verb} takes only {' or '.join(self.actions[verb].targets)} nodes, not poses"
        return None

    def verbs(self) -> dict[str, str]:
        """The verb of each role the set plays (the first action, for a role several play)."""
        out: dict[str, str] = {}
        for spec in self.actions.values():
            if spec.role:
                out.setdefault(spec.role, spec.name)
        return out

    def without_program(self, roles: Collection[str]) -> list[str]:
        """The actions a robot whose programs play `roles` cannot run, as `verb (role)`."""
        return [f"{n} ({spec.role or 'no role'})" for n, spec in self.actions.items() if spec.role not in roles]

    def prompt_lines(self) -> list[str]:
        """One line per action for an LLM prompt: `pickup(<object>): ...`."""
        out = []
        for spec in self.actions.values():
            arg = f"<{'|'.join(spec.targets)}>" if spec.targets else ""
            out.append(f"{spec.name}({arg}): {spec.description}")
        return out


def _clause(raw: Any, table: Mapping[str, Any], where: str) -> Clause:
    if isinstance(raw, str):
        name, arg = raw, None
    elif isinstance(raw, Mapping) and len(raw) == 1:
        name, arg = next(iter(raw.items()))
    else:
        raise ActionSetError(f"{where}: expected a name or {{name: argument}}, got {raw!r}")
    if not isinstance(name, str) or name not in table:
        raise ActionSetError(f"{where}: unknown '{name}' (known: {', '.join(sorted(table))})")
    return Clause(name, arg)


def _str_list(raw: Any, where: str, what: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if not isinstance(raw, list) or not all(isinstance(v, str) and v for v in raw):
        raise ActionSetError(f"{where}: {what} must be a name or a list of names, got {raw!r}")
    return tuple(raw)


def _repeat_policy(raw: Any, where: str, default: str) -> str:
    if raw is None:
        return default
    if raw not in REPEAT_POLICIES:
        raise ActionSetError(f"{where}: on_repeat must be error or noop, got {raw!r}")
    return str(raw)


def _action(name: Any, spec: Any, source: str, set_repeat: str) -> ActionSpec:
    where = f"{source}: action '{name}'"
    if not isinstance(name, str) or not name.isidentifier():
        raise ActionSetError(f"{where}: an action name must be a word (letters, digits, _)")
    if not isinstance(spec, Mapping):
        raise ActionSetError(f"{where} must be a mapping")
    unknown = set(spec) - _ACTION_KEYS
    if unknown:
        raise ActionSetError(
            f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} (known: {', '.join(sorted(_ACTION_KEYS))})"
        )
    targets = _str_list(spec.get("targets"), where, "targets")
    bad = [t for t in targets if t not in NODE_TYPES]
    if bad:
        raise ActionSetError(f"{where}: unknown target type(s) {bad} (known: {', '.join(NODE_TYPES)})")
    if targets and "affordance" not in spec:
        raise ActionSetError(
            f"{where}: missing 'affordance' (what the target must afford: a name, a list of accepted names, "
            "or null when any target will do)"
        )
    role = spec.get("role") or ""
    if role and (not isinstance(role, str) or role not in ROLES):
        raise ActionSetError(f"{where}: unknown role {role!r} (known: {', '.join(ROLES)})")
    for key in ("preconditions", "effects"):
        if spec.get(key) is not None and not isinstance(spec.get(key), list):
            raise ActionSetError(f"{where}: {key} must be a list")
    preconditions = tuple(_clause(c, PRECONDITIONS, where) for c in spec.get("preconditions") or ())
    effects = tuple(_clause(c, EFFECTS, where) for c in spec.get("effects") or ())
    if not effects:
        raise ActionSetError(f"{where}: no effects (an action that changes nothing; a name the base set lacks?)")
    if role and not (len(effects) == 1 and ROLES[role].played_by((c.name, c.arg) for c in effects)):
        # a robot runs the role's program only: any other effect would be a change the graph records and the
        # robot never makes (a fridge 'opened' by an access)
        played = roles_played((c.name, c.arg) for c in effects)
        raise ActionSetError(
            f"{where}: role '{role}' needs the one effect {ROLES[role].effect_text()}, got "
            + (", ".join(c.name if c.arg is None else f"{c.name}: {c.arg}" for c in effects))
            + (f" (they play {', '.join(played)})" if played else "")
        )
    return ActionSpec(
        name=name,
        targets=targets,
        preconditions=preconditions,
        effects=effects,
        description=str(spec.get("description", "")),
        optional_target=bool(spec.get("optional_target", False)),
        affordances=_str_list(spec.get("affordance"), where, "affordance"),
        role=str(role),
        on_repeat=_repeat_policy(spec.get("on_repeat"), where, set_repeat),
    )


def _extended(data: Mapping[str, Any], source: str, depth: int = 0) -> Mapping[str, Any]:
    """`data` with its `extends` resolved: the bundled base's keys, then this file's; an action under a name the
    base has changes only the keys it gives; `without` drops base actions."""
    base_name = data.get("extends")
    if base_name is None:
        if "without" in data:
            raise ActionSetError(f"{source}: 'without' drops actions of the set it extends; add 'extends'")
        return data
    if not isinstance(base_name, str) or base_name not in builtin_action_sets():
        raise ActionSetError(
            f"{source}: extends must name a bundled action set ({', '.join(builtin_action_sets())}), got {base_name!r}"
        )
    if depth >= MAX_EXTENDS_DEPTH:
        raise ActionSetError(f"{source}: extends goes more than {MAX_EXTENDS_DEPTH} sets deep (a loop?)")
    base = _extended(_bundled_data(base_name), f"{base_name}.yaml", depth + 1)
    if not isinstance(base, Mapping) or not isinstance(base.get("actions"), Mapping):
        raise ActionSetError(f"{source}: the set it extends, {base_name}, has no 'actions' mapping")
    own_actions = data.get("actions", {})
    if not isinstance(own_actions, Mapping):
        raise ActionSetError(f"{source}: 'actions' must be a mapping")
    without = _str_list(data.get("without"), source, "without")
    unknown = [name for name in without if name not in base["actions"]]
    if unknown:
        raise ActionSetError(f"{source}: without: {base_name} has no action {', '.join(unknown)}")
    both = sorted(set(without) & set(map(str, own_actions)))
    if both:
        raise ActionSetError(f"{source}: {', '.join(both)} both dropped (without) and given (actions)")
    actions = {name: spec for name, spec in base["actions"].items() if name not in without}
    for name, spec in own_actions.items():
        old = actions.get(name)
        if isinstance(old, Mapping) and isinstance(spec, Mapping):
            blank = sorted(str(key) for key, value in spec.items() if value is None and key != "affordance")
            if blank:  # YAML's `preconditions:` with nothing after it would drop the base's checks
                raise ActionSetError(f"{source}: action '{name}': {', '.join(blank)} left blank (give a value)")
            actions[name] = {**old, **spec}
        else:
            actions[name] = spec
    merged = {k: v for k, v in base.items() if k not in ("name", "auto_insert", "without")}
    merged.update({k: v for k, v in data.items() if k not in ("extends", "without")})
    merged["actions"] = actions
    return merged


def _auto_insert(raw: Any, actions: Mapping[str, ActionSpec], source: str) -> tuple[str, ...]:
    roles = _str_list(raw, source, "auto_insert")
    played = {spec.role for spec in actions.values() if spec.role}
    for role in roles:
        insertable = [name for name, known in ROLES.items() if known.unique]
        if role not in insertable:
            raise ActionSetError(f"{source}: auto_insert: '{role}' cannot be inserted (roles: {', '.join(insertable)})")
        if role not in played:
            raise ActionSetError(f"{source}: auto_insert: no action of this set plays the role '{role}'")
    return roles


def action_set_from_dict(data: Any, source: str = "<dict>") -> ActionSet:
    if not isinstance(data, Mapping):
        raise ActionSetError(f"{source}: an action set needs a 'name' and an 'actions' mapping")
    unknown = set(data) - _SET_KEYS
    if unknown:
        raise ActionSetError(
            f"{source}: unknown key(s) {', '.join(sorted(map(str, unknown)))} (known: {', '.join(sorted(_SET_KEYS))})"
        )
    data = _extended(data, source)
    if not isinstance(data.get("actions"), Mapping):
        raise ActionSetError(f"{source}: an action set needs a 'name' and an 'actions' mapping")
    set_repeat = _repeat_policy(data.get("on_repeat"), source, "error")
    actions: dict[str, ActionSpec] = {}
    for name, spec in data["actions"].items():
        actions[str(name)] = _action(name, spec, source, set_repeat)
    roles: dict[str, str] = {}
    for spec in actions.values():
        if spec.role and ROLES[spec.role].unique and spec.role in roles:
            raise ActionSetError(f"{source}: role '{spec.role}' is played by both {roles[spec.role]} and {spec.name}")
        if spec.role:
            roles.setdefault(spec.role, spec.name)
    return ActionSet(
        name=str(data.get("name", source)),
        actions=actions,
        description=str(data.get("description", "")),
        on_repeat=set_repeat,
        auto_insert=_auto_insert(data.get("auto_insert"), actions, source),
    )


def builtin_action_sets() -> list[str]:
    folder = resources.files("sayplan_core.sim").joinpath("action_sets")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _bundled_data(name: str) -> Any:
    """The parsed YAML of a bundled set (not yet checked)."""
    text = resources.files("sayplan_core.sim").joinpath("action_sets", f"{name}.yaml").read_text(encoding="utf-8")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ActionSetError(f"{name}.yaml: invalid YAML: {exc}") from exc


def load_action_set(name_or_path: str) -> ActionSet:
    """A bundled set by name (sayplan, lookplangraph) or a YAML file path (read again once it changed: a node
    configured again after its file was fixed gets the fixed set)."""
    if not isinstance(name_or_path, str):
        raise TypeError(f"an action set is named by a string, got {type(name_or_path).__name__}")
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        try:
            stat = path.stat()
        except OSError:
            stat = None  # read_text says why, in its words
        version = None if stat is None else (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
        return _load_file(name_or_path, version)
    if "/" in name_or_path or name_or_path not in builtin_action_sets():
        raise ActionSetError(
            f"unknown action set '{name_or_path}' (bundled: {', '.join(builtin_action_sets())}, or a .yaml path)"
        )
    return _load_bundled(name_or_path)


@lru_cache(maxsize=16)
def _load_bundled(name: str) -> ActionSet:
    return action_set_from_dict(_bundled_data(name), f"{name}.yaml")


@lru_cache(maxsize=16)
def _load_file(name: str, version: tuple[int, int, int, int] | None) -> ActionSet:
    """`version` (mtime, ctime, size, inode) is only the cache key."""
    path = Path(name)
    try:
        text = files.read_text(path, MAX_FILE_BYTES, "action set")
    except files.FileReadError as exc:
        raise ActionSetError(str(exc)) from exc
    try:
        data = files.load_yaml(text)
    except yaml.YAMLError as exc:
        raise ActionSetError(f"{name}: invalid YAML: {exc}") from exc
    if isinstance(data, Mapping):
        if "name" not in data:  # named by the file's stem, not its host path (the name travels in messages)
            data = {**data, "name": path.stem}
        elif data["name"] in builtin_action_sets():  # it would pass for the bundled set where sets go by name
            raise ActionSetError(f"{name}: name {data['name']!r} is a bundled action set's; give this set its own")
    return action_set_from_dict(data, name)
