"""Action sets loaded from YAML: which actions exist, their targets, preconditions and effects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sayplan_core.graph.model import NODE_TYPES
from sayplan_core.sim.predicates import EFFECTS, PRECONDITIONS


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

    @property
    def takes_target(self) -> bool:
        return bool(self.targets)


@dataclass(frozen=True)
class ActionSet:
    name: str
    actions: Mapping[str, ActionSpec] = field(default_factory=dict)
    description: str = ""

    def __contains__(self, action: object) -> bool:
        return action in self.actions

    def names(self) -> list[str]:
        return list(self.actions)

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
    if name not in table:
        raise ActionSetError(f"{where}: unknown '{name}' (known: {', '.join(sorted(table))})")
    return Clause(str(name), arg)


def action_set_from_dict(data: Any, source: str = "<dict>") -> ActionSet:
    if not isinstance(data, Mapping) or not isinstance(data.get("actions"), Mapping):
        raise ActionSetError(f"{source}: an action set needs a 'name' and an 'actions' mapping")
    actions: dict[str, ActionSpec] = {}
    for name, spec in data["actions"].items():
        where = f"{source}: action '{name}'"
        if not isinstance(spec, Mapping):
            raise ActionSetError(f"{where} must be a mapping")
        targets = tuple(spec.get("targets") or ())
        bad = [t for t in targets if t not in NODE_TYPES]
        if bad:
            raise ActionSetError(f"{where}: unknown target type(s) {bad}")
        actions[str(name)] = ActionSpec(
            name=str(name),
            targets=targets,
            preconditions=tuple(_clause(c, PRECONDITIONS, where) for c in spec.get("preconditions") or ()),
            effects=tuple(_clause(c, EFFECTS, where) for c in spec.get("effects") or ()),
            description=str(spec.get("description", "")),
            optional_target=bool(spec.get("optional_target", False)),
        )
    return ActionSet(name=str(data.get("name", source)), actions=actions, description=str(data.get("description", "")))


def builtin_action_sets() -> list[str]:
    folder = resources.files("sayplan_core.sim").joinpath("action_sets")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=16)
def load_action_set(name_or_path: str) -> ActionSet:
    """A bundled set by name (sayplan, lookplangraph) or a YAML file path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        text = path.read_text(encoding="utf-8")
        source = str(path)
    else:
        resource = resources.files("sayplan_core.sim").joinpath("action_sets", f"{name_or_path}.yaml")
        if not resource.is_file():
            raise ActionSetError(
                f"unknown action set '{name_or_path}' (bundled: {', '.join(builtin_action_sets())}, or a .yaml path)"
            )
        text = resource.read_text(encoding="utf-8")
        source = f"{name_or_path}.yaml"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ActionSetError(f"{source}: invalid YAML: {exc}") from exc
    return action_set_from_dict(data, source)
