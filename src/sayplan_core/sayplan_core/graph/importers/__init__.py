"""Importers from other scene-graph formats into the native model.

- `sayplan_json`: SayPlan-style JSON (SayPlan appendix K/L).
- `grasif`: LookPlanGraph / GRASIF JSON (grouped, node-list and task-list layouts).
- `stanford`: Stanford 3D Scene Graph `.npz` (Gibson "tiny" buildings).
- `hydra`: Hydra / Spark-DSG graphs (`.json`, `.sparkdsg`), read with spark_dsg (and written by `hydra_export`).

Every importer produces native dicts through `common.Builder` and then goes through
`graph_from_dict`, so imported files get exactly the same validation. The options
(`ImportOptions`: connectivity from a file, type overrides by class, where the agent
is) work the same for every format.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sayplan_core.graph import native_format
from sayplan_core.graph.importers import grasif, hydra, sayplan_json
from sayplan_core.graph.importers.common import (
    Imported,
    ImportOptions,
    load_json,
    read_agent_at_by_task,
    read_connectivity,
    read_connectivity_by_task,
    read_labels,
    read_types,
)
from sayplan_core.graph.importers.grasif import (
    GrasifTask,
    PerTask,
    TaskImport,
    import_grasif,
    import_grasif_json,
    import_grasif_tasks,
    read_grasif_tasks,
)
from sayplan_core.graph.importers.sayplan_json import import_sayplan, import_sayplan_json
from sayplan_core.graph.importers.stanford import import_stanford, import_stanford_npz
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import FORMAT_NAME

FORMATS = ("auto", "native", "sayplan", "grasif", "stanford", "hydra")
_TRIED = (
    f'native (a JSON object with "format": "{FORMAT_NAME}"), sayplan ({sayplan_json.EXPECTED}), '
    f"grasif ({grasif.EXPECTED}), hydra ({hydra.EXPECTED}); stanford is read from .npz files"
)


def detect_format(path: str | Path) -> str:
    """What `auto` makes of a file: by extension (.npz), then by content; an error says what it tried."""
    path = Path(path)
    if path.suffix == ".npz":
        return "stanford"
    if path.suffix in (".sparkdsg", ".bson"):
        return "hydra"
    data, source = load_json(path)
    if isinstance(data, Mapping) and data.get("format") == FORMAT_NAME:
        return "native"
    if hydra.looks_like(data):
        return "hydra"
    if sayplan_json.looks_like(data):
        return "sayplan"
    kind = grasif.layout(data)
    if kind == "tasks":
        return "grasif-tasks"
    if kind is not None:
        return "grasif"
    raise GraphError(f"{source}: not a scene graph in any format read here; tried {_TRIED}")


def is_task_list(path: str | Path) -> bool:
    """True for a GRASIF task list (scenes with init and goal), which imports into a folder, not one graph."""
    path = Path(path)
    return path.suffix not in (".npz", ".sparkdsg", ".bson") and grasif.layout(load_json(path)[0]) == "tasks"


def import_file(path: str | Path, fmt: str = "auto", options: ImportOptions | None = None) -> Imported:
    """One scene from any supported file, with what the importer added (invented links, agent) in `notes`."""
    path = Path(path)
    if fmt not in FORMATS:
        raise GraphError(f"unknown graph format '{fmt}' (use {', '.join(FORMATS)})")
    chosen = detect_format(path) if fmt == "auto" else fmt
    if chosen == "grasif-tasks":
        chosen = "grasif"  # its importer says the file holds tasks, and how to import them
    if chosen == "native":
        if options is not None and (options.connectivity is not None or options.types or options.agent_at):
            raise GraphError(f"{path}: a native file is read as it is; the import options apply to other formats")
        graph = native_format.load(path, require_agent=False)
        return Imported(graph, [], "native")
    if chosen == "stanford":
        if path.suffix != ".npz":
            raise GraphError(f"{path}: --format stanford reads .npz files (the Stanford 3D Scene Graph dataset)")
        return import_stanford(path, options)
    if chosen == "hydra":
        return hydra.import_hydra(path, options)
    if path.suffix == ".npz":
        raise GraphError(f"{path}: an .npz file is a Stanford 3D Scene Graph; use --format stanford or auto")
    if chosen == "sayplan":
        return import_sayplan(path, options)
    return import_grasif(path, options)


def import_graph(path: str | Path, fmt: str = "auto", options: ImportOptions | None = None) -> SceneGraph:
    """Load any supported file; `auto` picks by extension and content."""
    return import_file(path, fmt, options).graph


__all__ = [
    "FORMATS",
    "GrasifTask",
    "ImportOptions",
    "Imported",
    "PerTask",
    "TaskImport",
    "detect_format",
    "import_file",
    "import_graph",
    "import_grasif",
    "import_grasif_json",
    "import_grasif_tasks",
    "import_sayplan",
    "import_sayplan_json",
    "import_stanford",
    "import_stanford_npz",
    "is_task_list",
    "read_agent_at_by_task",
    "read_connectivity",
    "read_connectivity_by_task",
    "read_grasif_tasks",
    "read_labels",
    "read_types",
]
