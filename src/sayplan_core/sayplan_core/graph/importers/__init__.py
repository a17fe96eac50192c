"""Importers from other scene-graph formats into the native model.

- `sayplan_json`: SayPlan-style JSON (SayPlan appendix K/L).
- `grasif`: LookPlanGraph / GRASIF-style JSON.
- `stanford`: Stanford 3D Scene Graph `.npz` (Gibson "tiny" buildings).

Every importer produces a native dict first and then goes through
`graph_from_dict`, so imported files get exactly the same validation.
"""

from __future__ import annotations

from pathlib import Path

from sayplan_core.graph.importers.common import load_json
from sayplan_core.graph.importers.grasif import import_grasif_json
from sayplan_core.graph.importers.sayplan_json import import_sayplan_json
from sayplan_core.graph.importers.stanford import import_stanford_npz
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import FORMAT_NAME

IMPORTERS = {
    "native": None,
    "sayplan": import_sayplan_json,
    "grasif": import_grasif_json,
    "stanford": import_stanford_npz,
}


def import_graph(path: str | Path, fmt: str = "auto", require_agent: bool = True) -> SceneGraph:
    """Load any supported file; `auto` picks by extension and content."""
    from sayplan_core.graph import native_format

    path = Path(path)
    if fmt == "auto":
        if path.suffix == ".npz":
            fmt = "stanford"
        else:
            data, _ = load_json(path)
            if data.get("format") == FORMAT_NAME:
                fmt = "native"
            elif "links" in data:
                fmt = "sayplan"
            else:
                fmt = "grasif"
    if fmt == "native":
        return native_format.load(path, require_agent=require_agent)
    if fmt == "sayplan":
        return import_sayplan_json(path)
    if fmt == "grasif":
        return import_grasif_json(path)
    if fmt == "stanford":
        return import_stanford_npz(path)
    raise GraphError(f"unknown graph format '{fmt}' (use auto, native, sayplan, grasif or stanford)")


__all__ = ["IMPORTERS", "import_graph", "import_grasif_json", "import_sayplan_json", "import_stanford_npz"]
