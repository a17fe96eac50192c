"""A DFA for a co-safe formula, built by ltlf2dfa (MONA) and read back from its DOT output.

Finite-trace (LTLf) semantics agree with co-safe LTL's good prefixes for the missions
planned here (reach, avoid-until, sequences); the trace is the labels of the
navigation nodes visited, starting with the start node.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from functools import lru_cache

from sayplan_core.ltl.formula import Formula, FormulaError

_EDGE = re.compile(r'^\s*(\d+)\s*->\s*(\d+)\s*\[label="([^"]*)"\];')
_ACCEPTING = re.compile(r"node \[shape = doublecircle\];([^\n]*)")
_INIT = re.compile(r"init\s*->\s*(\d+);")


class AutomatonError(RuntimeError):
    """MONA or ltlf2dfa is missing or failed."""


def _guard(text: str) -> tuple[tuple[tuple[str, bool], ...], ...]:
    """A MONA guard ("a & ~b", "true") as a disjunction of conjunctions of literals."""
    text = text.strip()
    if text == "true":
        return ((),)
    if text == "false":
        return ()
    out = []
    for clause in text.split("|"):
        literals = []
        for lit in clause.replace("(", " ").replace(")", " ").split("&"):
            lit = lit.strip()
            literals.append((lit[1:], False) if lit.startswith("~") else (lit, True))
        out.append(tuple(literals))
    return tuple(out)


@dataclass
class Dfa:
    initial: int
    accepting: frozenset[int]
    # state -> [(guard, next state)], guard over the renamed symbols
    edges: dict[int, list[tuple[tuple[tuple[tuple[str, bool], ...], ...], int]]]
    symbol_of: dict[str, str]  # atom (node id) -> symbol
    _cache: dict[tuple[int, frozenset[str]], int] = field(default_factory=dict)

    @property
    def states(self) -> list[int]:
        return sorted(set(self.edges) | {self.initial} | set(self.accepting))

    def step(self, state: int, atoms: frozenset[str]) -> int:
        """The next state after reading a letter in which exactly `atoms` hold."""
        key = (state, atoms)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        symbols = {self.symbol_of[a] for a in atoms if a in self.symbol_of}
        for guard, target in self.edges.get(state, []):
            if any(all((s in symbols) == positive for s, positive in clause) for clause in guard):
                self._cache[key] = target
                return target
        raise AutomatonError(f"the automaton has no transition from state {state} on {sorted(atoms)}")


def require_tools() -> None:
    """Fail early, with what to install, when MONA or ltlf2dfa is missing."""
    if shutil.which("mona") is None:
        raise AutomatonError("the 'mona' program is not installed (Debian: apt-get install mona)")
    try:
        import ltlf2dfa  # noqa: F401
    except ImportError as exc:
        raise AutomatonError(f"ltlf2dfa is not installed ({exc}); install requirements/planners.txt") from exc


@lru_cache(maxsize=64)
def _mona_dot(infix: str) -> str:
    require_tools()
    from ltlf2dfa.parser.ltlf import LTLfParser

    try:
        return str(LTLfParser()(infix).to_dfa())
    except Exception as exc:  # ltlf2dfa raises bare exceptions for parser and MONA failures
        raise AutomatonError(f"ltlf2dfa failed on {infix}: {exc}") from exc


def build_dfa(formula: Formula) -> Dfa:
    atoms = sorted(formula.atoms())
    symbol_of = {a: f"p{i}" for i, a in enumerate(atoms)}
    dot = _mona_dot(formula.infix(symbol_of))
    if "digraph" not in dot:
        raise AutomatonError(f"MONA gave no automaton for {formula.prefix()}: {dot.strip()[:200]}")
    init = _INIT.search(dot)
    if init is None:
        raise AutomatonError("the automaton has no initial state")
    accepting_match = _ACCEPTING.search(dot)
    accepting = (
        frozenset(int(s) for s in re.findall(r"\d+", accepting_match.group(1))) if accepting_match else frozenset()
    )
    edges: dict[int, list[tuple[tuple[tuple[tuple[str, bool], ...], ...], int]]] = {}
    for line in dot.splitlines():
        match = _EDGE.match(line)
        if match:
            edges.setdefault(int(match.group(1)), []).append((_guard(match.group(3)), int(match.group(2))))
    if not accepting:
        raise FormulaError(f"the formula {formula.prefix()} can never be satisfied")
    return Dfa(int(init.group(1)), accepting, edges, symbol_of)
