"""LTLf formulas over scene-graph node ids: the accepted vocabulary and its two notations.

Prefix notation (Dai et al.) needs no brackets, so an LLM's formula either parses
completely or fails at a named token: `& F kitchen U ! lab nikos_desk` is
"eventually the kitchen, and avoid the lab until Niko's desk". Brackets and commas
are ignored, so `F(& a b)` reads as `F & a b`.

List notation, as LLM prompts in the literature ask for it, is the same grammar
written as nested lists (JSON or a Python literal): an operator is a list whose
first item spells it, followed by its arguments; an atom is a string. So
`["AND", ["EVENTUALLY", "reach(apple1)"], ["ALWAYS", ["NOT", "enter(lab)"]]]` is
`& F apple1 G ! lab`. AND and OR take two or more arguments (folded to the right). A flat list of prefix
tokens (`["&", "F", "apple1", "G", "!", "lab"]`, as Dai et al.'s GPT output files hold them) is read as prefix.
In both notations `reach(x)` and `enter(x)` name the proposition x: what it means
(in a room, next to an object) follows from x's node type, not from the wrapper.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeGuard

#: Every accepted spelling of each operator, by the operator's canonical symbol.
#: Words are matched in any case; the one-letter forms only as written here.
SPELLINGS: dict[str, tuple[str, ...]] = {
    "!": ("!", "~", "NOT", "NEGATION"),
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
MAX_DEPTH = 64  # nesting of list-notation operators (and of brackets in its text)
MAX_TEXT_CHARS = 32_000  # list-notation text, before it is read
ATOM_WRAPPERS = ("reach", "enter")  # reach(x) and enter(x) name the proposition x
#: the canonical word of each operator, for list notation
WORD_OF = {"!": "NOT", "&": "AND", "|": "OR", "->": "IMPLY", "<->": "EQUAL", "X": "NEXT", "F": "EVENTUALLY"}
WORD_OF |= {"G": "ALWAYS", "U": "UNTIL", "R": "RELEASE"}
VARIADIC = frozenset({"&", "|"})  # associative: list notation accepts two or more arguments
UNARY = frozenset({"!", "X", "F", "G"})
BINARY = frozenset({"&", "|", "->", "<->", "U", "R"})

_WORDS = {s.lower(): op for op, forms in SPELLINGS.items() for s in forms if len(s) > 1 and s.isalpha()}
_SYMBOLS = {s: op for op, forms in SPELLINGS.items() for s in forms if not (len(s) > 1 and s.isalpha())}
_NOT_IN_ATOMS = set("!~&|<>=()[],")
_LIST_TEXT = re.compile(r"\s*(\[\s*[\"'\[]|[\"'])")
_WRAPPED = re.compile(r"\b(" + "|".join(ATOM_WRAPPERS) + r")\(\s*([^\s()\[\],]+)\s*\)", re.IGNORECASE)


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

    def as_list(self) -> list[object] | str:
        """Canonical list notation (parses back to the same formula); json.dumps gives its text. A right-nested
        chain of AND (or OR) is one list of all its arguments, so long conjunctions stay within MAX_DEPTH."""
        if self.op == "atom":
            return self.atom
        if self.op in CONSTANTS:
            return self.op
        args = list(self.args)
        while self.op in VARIADIC and args[-1].op == self.op:
            args[-1:] = args[-1].args
        return [WORD_OF[self.op], *(a.as_list() for a in args)]


def tokenize(text: str) -> list[str]:
    text = _WRAPPED.sub(lambda m: f" {m.group(2)} ", text)  # reach(x), enter(x) -> x
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


def _known_ids(known_atoms: Iterable[str] | None, used: Iterable[str]) -> set[str] | None:
    """The node ids a formula may name; refuses ids spelled like an operator or constant that the formula uses."""
    if known_atoms is None:
        return None
    known = set(known_atoms)
    # an id spelled like an operator is ambiguous only where the formula has that token (in any case)
    spelled_like = {a for a in known if operator_of(a) is not None or a.lower() in CONSTANTS}
    used_lower = {t.lower() for t in used}
    clash = sorted(a for a in spelled_like if a.lower() in used_lower)
    if clash:
        raise FormulaError(f"node id(s) {', '.join(clash)} are spelled like operators and cannot be used")
    return known - spelled_like


def _atom(token: str, known: set[str] | None) -> Formula:
    """A constant or a proposition; FormulaError naming the token when it is neither."""
    if token.lower() in CONSTANTS:
        return Formula(CONSTANTS[token.lower()])
    if (known is not None and token not in known) or any(c in _NOT_IN_ATOMS for c in token) or not token:
        ids = f"; node ids: {', '.join(sorted(known))}" if known is not None else ""
        raise FormulaError(
            f"'{token}' is neither an operator nor a node id of the mapping (accepted: {accepted_syntax()}{ids})"
        )
    return Formula("atom", atom=token)


def parse_formula(data: object, known_atoms: Iterable[str] | None = None) -> Formula:
    """A formula in either notation: a list, list-notation text (it starts with a quote, or '[' and a quote or '['),
    or prefix text (where `[]` is G)."""
    if isinstance(data, str) and not _LIST_TEXT.match(data):
        return parse_prefix(data, known_atoms)
    return parse_list(data, known_atoms)


def parse_prefix(text: str, known_atoms: Iterable[str] | None = None) -> Formula:
    """Parse a prefix formula; with `known_atoms`, every other token must be an operator or a constant."""
    tokens = tokenize(text)
    if not tokens:
        raise FormulaError("the formula is empty")
    if len(tokens) > MAX_FORMULA_SIZE:
        raise FormulaError(f"the formula has {len(tokens)} tokens; at most {MAX_FORMULA_SIZE}")
    known = _known_ids(known_atoms, tokens)
    position = 0

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
        return _atom(token, known)

    formula = parse()
    if position != len(tokens):
        raise FormulaError(f"unexpected tokens after a complete formula: '{' '.join(tokens[position:])}'")
    return formula


def _read_list_text(text: str) -> object:
    """The nested lists of list-notation text (JSON, or a Python literal with single quotes), bounded first."""
    if len(text) > MAX_TEXT_CHARS:
        raise FormulaError(f"the formula text has {len(text)} characters; at most {MAX_TEXT_CHARS}")
    depth = deepest = 0
    quote = ""
    escaped = False
    for char in text:  # bracket depth outside strings, so no reader recurses deeper than MAX_DEPTH
        if quote:
            escaped, quote = (not escaped and char == "\\"), ("" if char == quote and not escaped else quote)
        elif char in "\"'":
            quote = char
        elif char == "[":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "]":
            depth -= 1
    if deepest > MAX_DEPTH:
        raise FormulaError(f"the formula nests {deepest} lists deep; at most {MAX_DEPTH}")
    try:
        return json.loads(text)
    except ValueError as json_error:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise FormulaError(f"the formula is not a well-formed list: {json_error}") from None


def _is_prefix_tokens(data: object) -> TypeGuard[list[str]]:
    """A flat list of prefix tokens, as Dai et al.'s GPT output files hold formulas (`["&", "F", "a", "G", "b"]`):
    strings only, an operator first and another after it, and more or fewer items than list notation gives that
    operator. In list notation an operator is never an argument, so no list-notation formula reads this way; with
    exactly as many items, neither reading can succeed and list notation's message names the misplaced operator."""
    if not isinstance(data, list) or len(data) < 2:
        return False
    if not all(isinstance(item, str) and item.strip() and len(item.split()) == 1 for item in data):
        return False  # each item one token: "F kitchen" as an item is list notation's (refused) atom
    first = operator_of(data[0].strip())
    if first is None or not any(operator_of(item.strip()) is not None for item in data[1:]):
        return False
    return len(data) != (2 if first in UNARY else 3)


def parse_list(data: object, known_atoms: Iterable[str] | None = None) -> Formula:
    """Parse list notation: nested lists, or their JSON (or Python literal) text; a string that is not such text
    is one atom. Errors name the item's place (formula[1][0] is the first item of the formula's first argument)."""
    if isinstance(data, str) and _LIST_TEXT.match(data):
        data = _read_list_text(data)
    if _is_prefix_tokens(data):
        return parse_prefix(" ".join(data), known_atoms)
    strings: list[str] = []
    count = 0

    def collect(item: object, depth: int, where: str) -> None:
        """Check the shape (depth, size, types) before any atom is judged, so errors come in a fixed order."""
        nonlocal count
        count += 1
        if count > MAX_FORMULA_SIZE:
            raise FormulaError(f"the formula has more than {MAX_FORMULA_SIZE} operators and atoms")
        if isinstance(item, str):
            strings.append(item)
            return
        if isinstance(item, bool):  # JSON true/false: the constants
            return
        if depth > MAX_DEPTH:
            raise FormulaError(f"the formula nests more than {MAX_DEPTH} lists deep")
        if not isinstance(item, (list, tuple)):
            raise FormulaError(f"{where} is {type(item).__name__} {str(item)[:40]!r}; expected a list or a string")
        if not item:
            raise FormulaError(f"{where} is an empty list; expected [operator, argument, ...]")
        for i, sub in enumerate(item[1:], 1):
            collect(sub, depth + 1, f"{where}[{i}]")

    collect(data, 1, "formula")
    known = _known_ids(known_atoms, strings)

    def parse(item: object, where: str) -> Formula:
        if isinstance(item, bool):
            item = "true" if item else "false"
        if isinstance(item, str):
            word = item.strip()
            wrapped = _WRAPPED.fullmatch(word)
            if wrapped is not None:
                word = wrapped.group(2)
            if operator_of(word) is not None:
                raise FormulaError(
                    f"{where} is the operator '{word}' where an atom belongs; write an operator as the first item "
                    f'of a list, e.g. ["{word}", ...]'
                )
            return _atom(word, known)
        assert isinstance(item, (list, tuple))
        name = item[0]
        op = operator_of(name.strip()) if isinstance(name, str) else None
        if op is None:
            raise FormulaError(
                f"{where}[0] is {name!r}, not an operator (accepted: {accepted_syntax()}; "
                f"atoms may be written {' or '.join(w + '(x)' for w in ATOM_WRAPPERS)})"
            )
        args = [parse(sub, f"{where}[{i}]") for i, sub in enumerate(item[1:], 1)]
        wanted = 1 if op in UNARY else 2
        if len(args) == wanted or (op in VARIADIC and len(args) > wanted):
            folded = Formula(op, tuple(args[-2:])) if len(args) > 1 else Formula(op, (args[0],))
            for left in reversed(args[:-2]):
                folded = Formula(op, (left, folded))
            return folded
        takes = f"{wanted} or more" if op in VARIADIC else str(wanted)
        raise FormulaError(f"{where}: '{name}' takes {takes} argument(s), got {len(args)}")

    return parse(data, "formula")
