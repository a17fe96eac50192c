"""The automaton against the LTLf definition: random formulas over 2-5 propositions, every accepted operator and
spelling, random and exhaustive finite words. This is the test that catches a mis-read automaton guard."""

from __future__ import annotations

import itertools
import random
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.ltl import Formula, FormulaError, build_dfa, holds, parse_prefix
from sayplan_core.ltl.formula import BINARY, SPELLINGS, UNARY

PROPS = ["kitchen", "lab", "hall", "desk", "sink"]
OPERATORS = sorted(UNARY | BINARY)
Word = list[frozenset[str]]

needs_mona = pytest.mark.skipif(shutil.which("mona") is None, reason="MONA (Debian package 'mona') is not installed")
if shutil.which("mona") is None:
    print("test_ltl_semantics: the Debian package 'mona' is missing; the automaton tests skip")


def literal(f: Formula, trace: Word, i: int) -> bool:
    """LTLf as written in De Giacomo and Vardi's definition, with no shortcuts (slow, for short traces)."""
    last = len(trace) - 1
    later = range(i, last + 1)
    if f.op == "atom":
        return f.atom in trace[i]
    if f.op in ("true", "false"):
        return f.op == "true"
    a = f.args
    if f.op == "!":
        return not literal(a[0], trace, i)
    if f.op == "&":
        return literal(a[0], trace, i) and literal(a[1], trace, i)
    if f.op == "|":
        return literal(a[0], trace, i) or literal(a[1], trace, i)
    if f.op == "->":
        return not literal(a[0], trace, i) or literal(a[1], trace, i)
    if f.op == "<->":
        return literal(a[0], trace, i) == literal(a[1], trace, i)
    if f.op == "X":
        return i < last and literal(a[0], trace, i + 1)
    if f.op == "F":
        return any(literal(a[0], trace, j) for j in later)
    if f.op == "G":
        return all(literal(a[0], trace, j) for j in later)
    if f.op == "U":
        return any(literal(a[1], trace, j) and all(literal(a[0], trace, k) for k in range(i, j)) for j in later)
    if f.op == "R":
        return all(literal(a[1], trace, j) or any(literal(a[0], trace, k) for k in range(i, j)) for j in later)
    raise AssertionError(f.op)


def formulas(props: list[str], leaves: int = 5) -> st.SearchStrategy[Formula]:
    atom = st.sampled_from(props).map(lambda p: Formula("atom", atom=p))
    constant = st.sampled_from([Formula("true"), Formula("false")])
    base = st.one_of(atom, atom, atom, constant)

    def extend(children: st.SearchStrategy[Formula]) -> st.SearchStrategy[Formula]:
        return st.one_of(
            st.tuples(st.sampled_from(sorted(UNARY)), children).map(lambda t: Formula(t[0], (t[1],))),
            st.tuples(st.sampled_from(sorted(BINARY)), children, children).map(lambda t: Formula(t[0], t[1:])),
        )

    return st.recursive(base, extend, max_leaves=leaves)


@st.composite
def missions(draw: st.DrawFn) -> tuple[Formula, list[str]]:
    """A formula whose root is any accepted operator, over 2-5 propositions."""
    props = PROPS[: draw(st.integers(2, 5))]
    op = draw(st.sampled_from(OPERATORS))
    args = tuple(draw(formulas(props)) for _ in range(1 if op in UNARY else 2))
    return Formula(op, args), props


def words(props: list[str], max_length: int = 7) -> st.SearchStrategy[Word]:
    letter = st.frozensets(st.sampled_from(props))
    return st.lists(letter, min_size=1, max_size=max_length)


def render(f: Formula, rng: random.Random) -> str:
    """Prefix text with a random accepted spelling (and case, for words) of every operator."""
    if f.op == "atom":
        return f.atom
    if f.op in ("true", "false"):
        return rng.choice([f.op, f.op.upper(), f.op.capitalize()])
    spelling = rng.choice(SPELLINGS[f.op])
    if len(spelling) > 1 and spelling.isalpha():
        spelling = rng.choice([spelling, spelling.lower(), spelling.capitalize()])
    return " ".join([spelling, *(render(a, rng) for a in f.args)])


def short_words(props: list[str], length: int) -> list[Word]:
    letters = [frozenset(c) for n in range(len(props) + 1) for c in itertools.combinations(props, n)]
    return [list(w) for k in range(1, length + 1) for w in itertools.product(letters, repeat=k)]


@given(missions(), st.randoms(use_true_random=False))
def test_every_spelling_parses_back_to_the_same_formula(mission: tuple[Formula, list[str]], rng: random.Random) -> None:
    formula, props = mission
    text = render(formula, rng)
    assert parse_prefix(text, props) == formula
    assert parse_prefix(formula.prefix(), props) == formula
    assert parse_prefix(f"({text})") == formula  # brackets are ignored


@given(missions(), words(PROPS, 6))
def test_the_evaluator_is_the_definition(mission: tuple[Formula, list[str]], word: Word) -> None:
    formula, _ = mission
    assert [holds(formula, word, i) for i in range(len(word))] == [literal(formula, word, i) for i in range(len(word))]


@needs_mona
@given(missions(), st.lists(words(PROPS), min_size=20, max_size=20))
def test_the_automaton_accepts_exactly_the_words_that_satisfy_the_formula(
    mission: tuple[Formula, list[str]], random_words: list[Word]
) -> None:
    formula, props = mission
    # every word of up to 3 letters over up to 3 of the propositions, and 20 random words up to 7 letters long
    checked = short_words(props[:3], 3 if len(props) <= 3 else 2) + random_words
    try:
        dfa = build_dfa(formula)
    except FormulaError:  # reported unsatisfiable: no word may satisfy it
        assert not any(holds(formula, w) for w in checked), formula.prefix()
        return
    for word in checked:
        assert dfa.accepts(word) == holds(formula, word), (formula.prefix(), [sorted(x) for x in word])


@needs_mona
def test_unsatisfiable_formulas_are_refused_with_the_reason() -> None:
    for text in ("& F kitchen ! F kitchen", "X false", "& G kitchen F ! kitchen", "U kitchen false"):
        with pytest.raises(FormulaError, match="can never be satisfied"):
            build_dfa(parse_prefix(text))


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "the formula is empty"),
        ("& F kitchen", "ends early"),
        ("F kitchen lab", "unexpected tokens after a complete formula: 'lab'"),
        ("F garage", "'garage' is neither an operator nor a node id of the mapping"),
        ("W kitchen lab", "'W' is neither an operator nor a node id"),
        ("F kitchen->lab", "'kitchen->lab' is neither an operator nor a node id"),
    ],
)
def test_parse_errors_name_the_token(text: str, error: str) -> None:
    with pytest.raises(FormulaError, match=error):
        parse_prefix(text, {"kitchen", "lab"})


def test_an_unknown_token_error_lists_the_accepted_vocabulary() -> None:
    with pytest.raises(FormulaError) as info:
        parse_prefix("WEAKUNTIL kitchen lab", {"kitchen", "lab"})
    message = str(info.value)
    for spelling in itertools.chain.from_iterable(SPELLINGS.values()):
        assert f" {spelling}" in message, spelling
    assert "node ids: kitchen, lab" in message


def test_word_forms_and_glued_negations() -> None:
    expected = parse_prefix("& F kitchen G ! lab")
    assert parse_prefix("AND EVENTUALLY kitchen ALWAYS NOT lab") == expected
    assert parse_prefix("and eventually(kitchen) always(~lab)") == expected
    assert parse_prefix("& F kitchen G !lab") == expected
    assert parse_prefix("e kitchen lab") == parse_prefix("<-> kitchen lab") == parse_prefix("EQUAL kitchen lab")
    assert parse_prefix("i kitchen lab") == parse_prefix("-> kitchen lab") == parse_prefix("IMPLY kitchen lab")
    assert parse_prefix("UNTIL NOT lab NEXT kitchen") == parse_prefix("U ! lab X kitchen")
    with pytest.raises(FormulaError, match="spelled like operators"):
        parse_prefix("F e", {"e", "kitchen"})
    with pytest.raises(FormulaError, match=r"node id\(s\) Not are spelled like operators"):
        parse_prefix("not kitchen", {"Not", "kitchen"})
    # an id spelled like an operator blocks only the formulas that have that token, not every formula
    assert parse_prefix("F kitchen", {"e", "X", "true", "kitchen"}) == parse_prefix("F kitchen")
