"""Optimal scene-graph planning for LTLf missions (Dai et al.): formulas, automata, product-graph A*.

The names below load their module on first use (PEP 562): the product search needs numpy, which declaring the
ltl planner's options (every CLI command does) should not load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sayplan_core.lazy import lazy_attributes

if TYPE_CHECKING:
    from sayplan_core.ltl.automaton import AutomatonError, Dfa, build_dfa, require_tools
    from sayplan_core.ltl.formula import (
        Formula,
        FormulaError,
        accepted_syntax,
        parse_formula,
        parse_list,
        parse_prefix,
    )
    from sayplan_core.ltl.product_search import LtlPath, NoSatisfyingPathError, ProductSearch, dijkstra_to_each_goal
    from sayplan_core.ltl.semantics import holds

__all__ = [
    "AutomatonError",
    "Dfa",
    "Formula",
    "FormulaError",
    "LtlPath",
    "NoSatisfyingPathError",
    "ProductSearch",
    "accepted_syntax",
    "build_dfa",
    "dijkstra_to_each_goal",
    "holds",
    "parse_formula",
    "parse_list",
    "parse_prefix",
    "require_tools",
]

_MODULE_OF = {
    **dict.fromkeys(("AutomatonError", "Dfa", "build_dfa", "require_tools"), "automaton"),
    **dict.fromkeys(
        ("Formula", "FormulaError", "accepted_syntax", "parse_formula", "parse_list", "parse_prefix"), "formula"
    ),
    **dict.fromkeys(("LtlPath", "NoSatisfyingPathError", "ProductSearch", "dijkstra_to_each_goal"), "product_search"),
    "holds": "semantics",
}
__getattr__ = lazy_attributes(__name__, _MODULE_OF)
