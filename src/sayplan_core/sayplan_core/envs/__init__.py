"""Bundled environments (office, home), their task sets, and a generator of large buildings.

Importing this package is light (`sayplan env list` reads only the names): the graph model and the readers load
with the first graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sayplan_core.graph.model import SceneGraph

BUNDLED_ENVS: tuple[str, ...] = ("office", "home")


def list_envs() -> list[str]:
    return list(BUNDLED_ENVS)


def load_env(
    name_or_path: str, require_agent: bool = True, progress: Callable[[str], None] | None = None
) -> SceneGraph:
    """A bundled environment by name, or any graph file the importers read, ready to plan on.

    A graph to plan on needs the robot in it: a file without an agent (an import that was not given
    --agent-at) is refused with a message naming the option, unless require_agent is False (a map
    perception is building). progress: stage lines for big native files.
    """
    import yaml

    from sayplan_core import files
    from sayplan_core.envs.authoring import env_from_authoring
    from sayplan_core.graph import native_format
    from sayplan_core.graph.model import GraphError
    from sayplan_core.graph.native_format import read_text

    if name_or_path in BUNDLED_ENVS:
        resource = resources.files("sayplan_core.envs").joinpath("data", f"{name_or_path}.yaml")
        data = yaml.safe_load(resource.read_text(encoding="utf-8"))
        return env_from_authoring(data, source=f"{name_or_path}.yaml")
    path = Path(name_or_path)
    if not path.exists():
        raise GraphError(
            f"unknown environment '{name_or_path}': not a bundled one ({', '.join(BUNDLED_ENVS)}) and no such file"
        )
    if not path.is_dir() and not path.is_file():  # sniffing the format of a FIFO would block, /dev/zero never end
        raise GraphError(f"cannot read {path}: not a regular file (a device, FIFO or socket)")
    if path.suffix in (".yaml", ".yml"):
        try:
            data = files.load_yaml(read_text(path, "environment file"))
        except yaml.YAMLError as exc:
            raise GraphError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from exc
        except RecursionError:
            raise GraphError(f"{path}: nested too deeply to be an environment") from None
        if not isinstance(data, dict):
            raise GraphError(f"{path}: expected a mapping at the top level")
        return env_from_authoring(data, source=str(path))
    from sayplan_core.graph.importers import detect_format, import_file

    if _looks_native(path) or detect_format(path) == "native":
        graph = native_format.load(path, require_agent=False, progress=progress)
    else:
        graph = import_file(path).graph
    if graph.agent_id is None and require_agent:
        raise GraphError(
            f"{path}: the graph has no agent node, so the robot cannot plan on it; "
            "place it with `sayplan env import SOURCE OUT --agent-at <room|pose>` (or add an agent node)"
        )
    return graph


def _looks_native(path: Path) -> bool:
    """A native file names its format in its first bytes (as `save` writes it): no second parse to find out."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return re.search(rb'^\s*\{\s*"format"\s*:\s*"sayplan-3dsg"', head) is not None


def tasks_path() -> Path:
    return Path(str(resources.files("sayplan_core.envs").joinpath("data", "sayplan_tasks.yaml")))
