"""LTLf formulas in prefix notation over scene-graph node ids: the accepted vocabulary and the parser.

Prefix notation (Dai et al.) needs no brackets, so an LLM's formula either parses
completely or fails at a named token: `& F kitchen U ! lab nikos_desk` is
"eventually the kitchen, and avoid the lab until Niko's desk". Brackets and commas
are ignored, so `F(& a b)` reads as `F & a b`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: Every accepted spelling of each operator, by the operator's canonical symbol.
#: Words are matched in any case; the one-letter forms only as written here.
SPELLINGS: dict[str, tuple[str, ...]] = {
    "!": ("!", "~", "NOT"),
    "&": ("&", "&&", "AND"),
    "|": ("|", "||", "OR"),
    "->": ("->", "=>", "i", "IMPLY", "IMPLIES"),
    "<->": ("<->", "<=>", "e", "EQUAL", "EQUIV", "IFF"),
    "X": ("X", "NEXT"),
    "F": ("F", "<>", "EVENTUALLY", "FINALLY"),
    "G": ("G", "[]", "ALWAYS", "GLOBALLY"),
    "U": ("U", "UNTIL"),
    "R": ("R", "V", "RELEASE"),
}
CONSTANTS: dict[str, str] = {"true": "true", "false": "false"}  # any case
MAX_FORMULA_SIZE = 400  # operators and atoms: MONA's worst case is non-elementary in the formula's size
UNARY = frozenset({"!", "X", "F", "G"})
BINARY = frozenset({"&", "|", "->", "<->", "U", "R"})

_WORDS = {s.lower(): op for op, forms in SPELLINGS.items() for s in forms if len(s) > 1 and s.isalpha()}
_SYMBOLS = {s: op for op, forms in SPELLINGS.items() for s in forms if not (len(s) > 1 and s.isalpha())}
_NOT_IN_ATOMS = set("!~&|<>=()[],")


def accepted_syntax() -> str:
    """One line listing the vocabulary, for error messages and prompts."""
    ops = "; ".join(f"{op}: {' '.join(forms)}" for op, forms in SPELLINGS.items())
    return f"operators ({ops}), constants true and false, and node ids"


def operator_of(token: str) -> str | None:
    """The canonical operator a token spells, or None."""
    return _SYMBOLS.get(token) or _WORDS.get(token.lower())


class FormulaError(ValueError):
    """A formula that does not parse, names unknown nodes, or can never be satisfied."""


@dataclass(frozen=True)
class Formula:
    op: str  # "atom", "true", "false", or a canonical operator (a key of SPELLINGS)
    args: tuple[Formula, ...] = ()
    atom: str = ""

    def atoms(self) -> set[str]:
        if self.op == "atom":
            return {self.atom}
        return set().union(*(a.atoms() for a in self.args)) if self.args else set()

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)

    def prefix(self) -> str:
        """Canonical prefix text (parses back to the same formula)."""
        if self.op == "atom":
            return self.atom
        if self.op in CONSTANTS:
            return self.op
        return " ".join([self.op, *(a.prefix() for a in self.args)])

    def infix(self) -> str:
        """Fully bracketed infix text, for people."""
        if self.op == "atom":
            return self.atom
        if self.op in CONSTANTS:
            return self.op
        parts = [a.infix() for a in self.args]
        if self.op in UNARY:
            return f"{self.op}({parts[0]})" if self.op != "!" else f"!{parts[0]}"
        return f"({parts[0]} {self.op} {parts[1]})"


def tokenize(text: str) -> list[str]:
    for bracket in "(),":
        text = text.replace(bracket, " ")
    tokens: list[str] = []
    for raw in text.split():
        # "!kitchen" and "~kitchen": a negation glued to its argument
        while len(raw) > 1 and raw[0] in "!~" and operator_of(raw) is None:
            tokens.append(raw[0])
            raw = raw[1:]
        tokens.append(raw)
    return tokens


def parse_prefix(text: str, known_atoms: Iterable[str] | None = None) -> Formula:
    """Parse a prefix formula; with `known_atoms`, every other token must be an operator or a constant."""
    tokens = tokenize(text)
    if not tokens:
        raise FormulaError("the formula is empty")
    if len(tokens) > MAX_FORMULA_SIZE:
        raise FormulaError(f"the formula has {len(tokens)} tokens; at most {MAX_FORMULA_SIZE}")
    known = set(known_atoms) if known_atoms is not None else None
    if known is not None:
        # an id spelled like an operator is ambiguous only where the formula has that token (in any case)
        spelled_like = {a for a in known if operator_of(a) is not None or a.lower() in CONSTANTS}
        used = {t.lower() for t in tokens}
        clash = sorted(a for a in spelled_like if a.lower() in used)
        if clash:
            raise FormulaError(f"node id(s) {', '.join(clash)} are spelled like operators and cannot be used")
        known -= spelled_like
    position = 0

    def unknown(token: str) -> FormulaError:
        ids = f"; node ids: {', '.join(sorted(known))}" if known is not None else ""
        return FormulaError(
            f"'{token}' is neither an operator nor a node id of the mapping (accepted: {accepted_syntax()}{ids})"
        )

    def parse() -> Formula:
        nonlocal position
        if position >= len(tokens):
            raise FormulaError(f"the formula ends early: an operator is missing an argument after '{tokens[-1]}'")
        token = tokens[position]
        position += 1
        op = operator_of(token)
        if op in UNARY:
            return Formula(op, (parse(),))
        if op in BINARY:
            left = parse()
            return Formula(op, (left, parse()))
        if token.lower() in CONSTANTS:
            return Formula(CONSTANTS[token.lower()])
        if (known is not None and token not in known) or any(c in _NOT_IN_ATOMS for c in token):
            raise unknown(token)
        return Formula("atom", atom=token)

    formula = parse()
    if position != len(tokens):
        raise FormulaError(f"unexpected tokens after a complete formula: '{' '.join(tokens[position:])}'")
    return formula
