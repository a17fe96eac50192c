"""Optimal scene-graph planning for LTL missions (Dai et al.): formulas, automata, product-graph A*."""

from sayplan_core.ltl.automaton import AutomatonError, Dfa, build_dfa, require_tools
from sayplan_core.ltl.formula import Formula, FormulaError, check_co_safe, parse_prefix
from sayplan_core.ltl.product_search import LtlPath, NoSatisfyingPathError, ProductSearch, dijkstra_to_each_goal

__all__ = [
    "AutomatonError",
    "Dfa",
    "Formula",
    "FormulaError",
    "LtlPath",
    "NoSatisfyingPathError",
    "ProductSearch",
    "build_dfa",
    "check_co_safe",
    "dijkstra_to_each_goal",
    "parse_prefix",
    "require_tools",
]
