"""No import circles among the project's modules, and no import from a lower layer to a higher one.

The graph is read from the source with `ast`: every `import` and `from ... import` at any depth (one inside a
function or under `if TYPE_CHECKING:` counts: hiding an import there leaves the loop in the design), relative ones
resolved. Importing `a.b.c` also runs the packages `a` and `a.b`, so an import names them too, unless the importer
sits inside them (they are already running then). A layer is a top-level part of sayplan_core (a subpackage or a
module), or one of the other packages; the layers' own graph must have no circle either."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
#: Imports from a lower layer to a higher one that are known and not yet undone: (importer's layer, imported
#: layer) -> why. Each must still be in the code (the test fails once it is gone, so the list only shrinks).
KNOWN_UPWARD = {
    ("sayplan_core.graph", "sayplan_core.sim"): "graph.importers.grasif checks a task's goal against an action set",
}
#: What the scene graph, the ground floor, must never import.
ABOVE_THE_GRAPH = ("sayplan_core.planners", "sayplan_core.llm", "sayplan_core.ltl", "sayplan_core.retrieval")
ROBOT_PACKAGES = ("sayplan_spot", "sayplan_franka_omron")

Edges = dict[str, dict[str, list[str]]]


def modules(src: Path) -> dict[str, Path]:
    """Module name -> file, for every package under src/<distribution>/ (not its setup.py, launch or tests)."""
    found: dict[str, Path] = {}
    for dist in sorted(p for p in src.iterdir() if p.is_dir()):
        for path in sorted(dist.rglob("*.py")):
            parts = list(path.relative_to(dist).with_suffix("").parts)
            if parts[0] in ("test", "launch", "hook") or parts == ["setup"] or "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            if parts:
                found[".".join(parts)] = path
    return found


def _named(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join([*here[: len(here) - node.level + 1], *([base] if base else [])])
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(src: Path) -> Edges:
    """importer -> {imported module: ["file:line", ...]} among the modules under `src`."""
    known = modules(src)
    edges: Edges = {name: {} for name in known}
    for name, path in known.items():
        enclosing = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 2)}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            where = f"{path.relative_to(src.parent).as_posix()}:{node.lineno}"
            for target in _named(name, path.name == "__init__.py", node):
                parts = target.split(".")
                for k in range(1, len(parts) + 1):  # the module and every package it runs on the way
                    ran = ".".join(parts[:k])
                    if ran in known and ran not in enclosing and where not in edges[name].get(ran, []):
                        edges[name].setdefault(ran, []).append(where)
    return edges


def circles(edges: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def describe(part: list[str], edges: Edges) -> str:
    return "\n".join(f"  {a} -> {b}: {', '.join(edges[a][b])}" for a in part for b in sorted(edges[a]) if b in part)


def layer(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "sayplan_core" and len(parts) > 1 else parts[0]


def layer_graph(edges: Edges) -> dict[str, dict[str, list[str]]]:
    layers: dict[str, dict[str, list[str]]] = {}
    for a, targets in edges.items():
        mine = layers.setdefault(layer(a), {})
        for b, where in targets.items():
            if layer(b) != layer(a):
                mine.setdefault(layer(b), []).extend(f"{a} -> {b} ({w})" for w in where)
    return layers


def test_the_scan_finds_a_circle_through_a_lazy_import_and_a_package(tmp_path: Path) -> None:
    """The checks below can fail: a loop closed inside a function, and one closed by a package's __init__."""
    package = tmp_path / "src" / "dist" / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("from pkg import b\n", encoding="utf-8")
    (package / "b.py").write_text("def later() -> None:\n    from . import a\n", encoding="utf-8")
    (package / "sub" / "__init__.py").write_text("from pkg.c import C\n", encoding="utf-8")
    (package / "sub" / "d.py").write_text("D = 1\n", encoding="utf-8")
    (package / "c.py").write_text("from pkg.sub.d import D\nC = D\n", encoding="utf-8")
    edges = import_graph(tmp_path / "src")
    assert sorted(circles(edges)) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub"]]
    assert edges["pkg.b"]["pkg.a"] == ["src/dist/pkg/b.py:2"]


def test_no_module_imports_itself_through_others() -> None:
    edges = import_graph(SRC)
    assert len(edges) > 150, "the sources were not found"
    found = circles(edges)
    assert not found, "import circles:\n" + "\n".join(describe(part, edges) for part in found)


def test_no_layer_imports_one_above_it() -> None:
    """The layers' graph has no circle once the known upward imports are set aside, and each of those is real."""
    layers = layer_graph(import_graph(SRC))
    for (low, high), why in KNOWN_UPWARD.items():
        assert high in layers.get(low, {}), f"{low} no longer imports {high} ({why}): drop it from KNOWN_UPWARD"
    kept = {a: {b: w for b, w in targets.items() if (a, b) not in KNOWN_UPWARD} for a, targets in layers.items()}
    found = circles(kept)
    assert not found, "layers that import each other:\n" + "\n".join(
        f"  {a} -> {b}: {'; '.join(kept[a][b][:3])}" for part in found for a in part for b in kept[a] if b in part
    )


def test_the_ground_and_the_core_import_nothing_above_them() -> None:
    layers = layer_graph(import_graph(SRC))
    assert [b for b in layers["sayplan_core.graph"] if b in ABOVE_THE_GRAPH] == []
    core = {b for a, targets in layers.items() if a.startswith("sayplan_core") for b in targets}
    assert core.isdisjoint({"sayplan_ros", *ROBOT_PACKAGES})
    assert set(layers["sayplan_ros"]).isdisjoint(ROBOT_PACKAGES)
