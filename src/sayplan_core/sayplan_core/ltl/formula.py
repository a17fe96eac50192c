"""LTL formulas in prefix notation over scene-graph node ids: parsing, co-safety, and export to ltlf2dfa.

Prefix notation (Dai et al.) needs no brackets, so an LLM's formula either parses
completely or fails at a named token: `& F kitchen U ! lab nikos_desk` is
"eventually the kitchen, and avoid the lab until Niko's desk".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

UNARY = {"!": "!", "not": "!", "F": "F", "G": "G", "X": "X"}
BINARY = {"&": "&", "and": "&", "|": "|", "or": "|", "->": "->", "U": "U", "R": "R"}


class FormulaError(ValueError):
    """A formula that does not parse, names unknown nodes, or is not syntactically co-safe."""


@dataclass(frozen=True)
class Formula:
    op: str  # "atom", "true", "false", or an operator of UNARY/BINARY values
    args: tuple[Formula, ...] = ()
    atom: str = ""

    def atoms(self) -> set[str]:
        if self.op == "atom":
            return {self.atom}
        return set().union(*(a.atoms() for a in self.args)) if self.args else set()

    def prefix(self) -> str:
        if self.op == "atom":
            return self.atom
        if self.op in ("true", "false"):
            return self.op
        return " ".join([self.op, *(a.prefix() for a in self.args)])

    def infix(self, rename: dict[str, str] | None = None) -> str:
        """ltlf2dfa syntax; `rename` maps atoms to the tool's lower-case symbols."""
        if self.op == "atom":
            return rename[self.atom] if rename else self.atom
        if self.op in ("true", "false"):
            return self.op
        parts = [a.infix(rename) for a in self.args]
        if self.op == "!":
            return f"!({parts[0]})"
        if self.op in ("F", "G", "X"):
            return f"{self.op}({parts[0]})"
        return f"({parts[0]} {self.op} {parts[1]})"


def parse_prefix(text: str, known_atoms: Iterable[str] | None = None) -> Formula:
    tokens = text.replace("(", " ").replace(")", " ").split()
    if not tokens:
        raise FormulaError("the formula is empty")
    known = set(known_atoms) if known_atoms is not None else None
    position = 0

    def parse() -> Formula:
        nonlocal position
        if position >= len(tokens):
            raise FormulaError(f"the formula ends early: an operator is missing an argument after '{tokens[-1]}'")
        token = tokens[position]
        position += 1
        if token in UNARY:
            return Formula(UNARY[token], (parse(),))
        if token in BINARY:
            left = parse()
            return Formula(BINARY[token], (left, parse()))
        if token in ("true", "false"):
            return Formula(token)
        if known is not None and token not in known:
            raise FormulaError(f"'{token}' is neither an operator nor a node id of the mapping")
        return Formula("atom", atom=token)

    formula = parse()
    if position != len(tokens):
        raise FormulaError(f"unexpected tokens after a complete formula: '{' '.join(tokens[position:])}'")
    return formula


def negation_normal_form(formula: Formula, negate: bool = False) -> Formula:
    """Push negations down to atoms, so co-safety can be read off the operators."""
    op, args = formula.op, formula.args
    if op == "atom":
        return Formula("!", (formula,)) if negate else formula
    if op in ("true", "false"):
        return Formula({"true": "false", "false": "true"}[op]) if negate else formula
    if op == "!":
        return negation_normal_form(args[0], not negate)
    if op == "->":
        return negation_normal_form(Formula("|", (Formula("!", (args[0],)), args[1])), negate)
    dual = {"&": "|", "|": "&", "F": "G", "G": "F", "U": "R", "R": "U", "X": "X"}
    new_op = dual[op] if negate else op
    return Formula(new_op, tuple(negation_normal_form(a, negate) for a in args))


def check_co_safe(formula: Formula) -> None:
    """Syntactic co-safety: in negation normal form, no G (always) and no R (release).

    Co-safe missions are satisfied by a finite path, which is what a planner can return.
    """

    def walk(f: Formula) -> None:
        if f.op in ("G", "R"):
            what = "G (always)" if f.op == "G" else "R (release)"
            raise FormulaError(
                f"the formula is not syntactically co-safe: it needs {what} in negation normal form "
                f"({f.prefix()}); write 'avoid a until b' as U ! a b instead of G ! a"
            )
        for a in f.args:
            walk(a)

    walk(negation_normal_form(formula))
