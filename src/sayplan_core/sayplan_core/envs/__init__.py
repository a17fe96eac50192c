"""Bundled environments (office, home), their task sets, and a generator of large buildings."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from sayplan_core.envs.authoring import env_from_authoring
from sayplan_core.graph.model import GraphError, SceneGraph

BUNDLED_ENVS: tuple[str, ...] = ("office", "home")


def list_envs() -> list[str]:
    return list(BUNDLED_ENVS)


def load_env(name_or_path: str, require_agent: bool = True) -> SceneGraph:
    """A bundled environment by name, or any graph file the importers read.

    require_agent: a native graph file without the robot is refused unless this is False (a map being built).
    """
    if name_or_path in BUNDLED_ENVS:
        resource = resources.files("sayplan_core.envs").joinpath("data", f"{name_or_path}.yaml")
        data = yaml.safe_load(resource.read_text(encoding="utf-8"))
        return env_from_authoring(data, source=f"{name_or_path}.yaml")
    path = Path(name_or_path)
    if not path.exists():
        raise GraphError(
            f"unknown environment '{name_or_path}': not a bundled one ({', '.join(BUNDLED_ENVS)}) and no such file"
        )
    if path.suffix in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise GraphError(f"{path}: invalid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise GraphError(f"{path}: expected a mapping at the top level")
        return env_from_authoring(data, source=str(path))
    from sayplan_core.graph.importers import import_graph

    return import_graph(path, require_agent=require_agent)


def tasks_path() -> Path:
    return Path(str(resources.files("sayplan_core.envs").joinpath("data", "sayplan_tasks.yaml")))
