"""The 3D scene graph: model, native format, importers, planner views, prompt text, tokens."""

from sayplan_core.graph.model import GraphError, Node, SceneGraph, UnknownNodeError
from sayplan_core.graph.native_format import graph_from_dict, graph_to_dict, load, loads, save
from sayplan_core.graph.views import GraphView, collapse

__all__ = [
    "GraphError",
    "GraphView",
    "Node",
    "SceneGraph",
    "UnknownNodeError",
    "collapse",
    "graph_from_dict",
    "graph_to_dict",
    "load",
    "loads",
    "save",
]
