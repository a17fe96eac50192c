"""Action sets loaded from YAML: which actions exist, their targets, preconditions and effects.

Schema (every key but `actions` optional; `affordance` required on actions that take a target):

    name: my_set
    description: one line
    on_repeat: error        # a step that would change nothing (open on an open node, turn_on on a node
                            # that is on): `error` refuses it with feedback, `noop` accepts it with a note
    actions:
      goto:
        role: navigate      # feedback names this verb when the agent must move first (navigate / access / open)
        targets: [room, pose]
        affordance: null    # what the target must afford: a name, a list of accepted names, or null for nothing
        preconditions: [reachable]
        effects: [move_agent]
        description: "Move the agent to any room node or pose node."
        on_repeat: error    # overrides the set's policy for this action

A set made of some of another set's actions (a robot without a toggle skill) is the
other file with those actions deleted: roles travel with their actions.

Two optional keys make a variant of a bundled set without copying it:

    extends: lookplangraph  # start from a bundled set's YAML; `actions` here add to or replace its actions
    auto_insert: [navigate, open]  # when a step fails for want of a step of one of these roles (the agent is in
                                   # another room, the target's container is closed), verify_plan inserts that step
                                   # and reports it (VerificationResult.inserted), as the source simulators do
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.graph.model import NODE_TYPES
from sayplan_core.sim.predicates import EFFECTS, PRECONDITIONS, ROLES

REPEAT_POLICIES = ("error", "noop")
_ACTION_KEYS = {"targets", "preconditions", "effects", "description", "optional_target", "affordance", "role"}
_ACTION_KEYS |= {"on_repeat"}
_SET_KEYS = {"name", "description", "actions", "on_repeat", "extends", "auto_insert"}
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

    def verb(self, role: str) -> str | None:
        """The action playing `role` (navigate, access, open) in this set, if any."""
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
        return {spec.role: spec.name for spec in self.actions.values() if spec.role}

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
    if role and role not in ROLES:
        raise ActionSetError(f"{where}: unknown role '{role}' (known: {', '.join(ROLES)})")
    for key in ("preconditions", "effects"):
        if spec.get(key) is not None and not isinstance(spec.get(key), list):
            raise ActionSetError(f"{where}: {key} must be a list")
    return ActionSpec(
        name=name,
        targets=targets,
        preconditions=tuple(_clause(c, PRECONDITIONS, where) for c in spec.get("preconditions") or ()),
        effects=tuple(_clause(c, EFFECTS, where) for c in spec.get("effects") or ()),
        description=str(spec.get("description", "")),
        optional_target=bool(spec.get("optional_target", False)),
        affordances=_str_list(spec.get("affordance"), where, "affordance"),
        role=str(role),
        on_repeat=_repeat_policy(spec.get("on_repeat"), where, set_repeat),
    )


def _extended(data: Mapping[str, Any], source: str, depth: int = 0) -> Mapping[str, Any]:
    """`data` with its `extends` resolved: the bundled base's keys, then this file's (actions merged by name)."""
    base_name = data.get("extends")
    if base_name is None:
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
    merged = {k: v for k, v in base.items() if k not in ("name", "auto_insert")}
    merged.update({k: v for k, v in data.items() if k != "extends"})
    merged["actions"] = {**base["actions"], **own_actions}
    return merged


def _auto_insert(raw: Any, actions: Mapping[str, ActionSpec], source: str) -> tuple[str, ...]:
    roles = _str_list(raw, source, "auto_insert")
    played = {spec.role for spec in actions.values() if spec.role}
    for role in roles:
        if role not in ROLES:
            raise ActionSetError(f"{source}: auto_insert: unknown role '{role}' (known: {', '.join(ROLES)})")
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
        if spec.role and spec.role in roles:
            raise ActionSetError(f"{source}: role '{spec.role}' is played by both {roles[spec.role]} and {spec.name}")
        if spec.role:
            roles[spec.role] = spec.name
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


@lru_cache(maxsize=16)
def load_action_set(name_or_path: str) -> ActionSet:
    """A bundled set by name (sayplan, lookplangraph) or a YAML file path."""
    if not isinstance(name_or_path, str):
        raise TypeError(f"an action set is named by a string, got {type(name_or_path).__name__}")
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        try:
            text = files.read_text(path, MAX_FILE_BYTES, "action set")
        except files.FileReadError as exc:
            raise ActionSetError(str(exc)) from exc
        source = str(path)
        try:
            data = files.load_yaml(text)
        except yaml.YAMLError as exc:
            raise ActionSetError(f"{source}: invalid YAML: {exc}") from exc
        return action_set_from_dict(data, source)
    if "/" in name_or_path or name_or_path not in builtin_action_sets():
        raise ActionSetError(
            f"unknown action set '{name_or_path}' (bundled: {', '.join(builtin_action_sets())}, or a .yaml path)"
        )
    return action_set_from_dict(_bundled_data(name_or_path), f"{name_or_path}.yaml")
