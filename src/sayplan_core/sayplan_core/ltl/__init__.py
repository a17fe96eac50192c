"""Optimal scene-graph planning for LTLf missions (Dai et al.): formulas, automata, product-graph A*."""

from sayplan_core.ltl.automaton import AutomatonError, Dfa, build_dfa, require_tools
from sayplan_core.ltl.formula import Formula, FormulaError, accepted_syntax, parse_formula, parse_list, parse_prefix
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
