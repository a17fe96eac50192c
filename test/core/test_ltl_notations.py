"""List notation (nested lists or their JSON, as LLM prompts in the literature ask for) against prefix notation:
on random formulas, the list rendering written here (random spellings, cases, reach()/enter() wrappers, AND/OR
chains flattened) parses to the same formula as the prefix text, and MONA builds the same automaton from both;
bad input of every kind gets one FormulaError that says what is wrong, never a crash or a recursion error."""

from __future__ import annotations

import json
import random
import shutil
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transcripts import FAST, transcript

from sayplan_core.envs import load_env
from sayplan_core.ltl import Formula, FormulaError, build_dfa, parse_formula, parse_list, parse_prefix
from sayplan_core.ltl.automaton import _run_mona
from sayplan_core.ltl.formula import BINARY, MAX_DEPTH, MAX_FORMULA_SIZE, SPELLINGS, UNARY
from sayplan_core.planners import PlannerOptions, make_planner

PROPS = ["kitchen", "lab", "apple1", "desk_2", "hall"]
#: the words the literature's list prompts use, written out here (not taken from the parser)
WORDS = {
    "!": ["NOT", "NEGATION"],
    "&": ["AND"],
    "|": ["OR"],
    "->": ["IMPLY"],
    "<->": ["EQUAL"],
    "X": ["NEXT"],
    "F": ["EVENTUALLY"],
    "G": ["ALWAYS"],
    "U": ["UNTIL"],
    "R": ["RELEASE"],
}


def formulas(props: list[str], leaves: int = 8) -> st.SearchStrategy[Formula]:
    atom = st.sampled_from(props).map(lambda p: Formula("atom", atom=p))
    base = st.one_of(atom, atom, atom, st.sampled_from([Formula("true"), Formula("false")]))

    def extend(children: st.SearchStrategy[Formula]) -> st.SearchStrategy[Formula]:
        return st.one_of(
            st.tuples(st.sampled_from(sorted(UNARY)), children).map(lambda t: Formula(t[0], (t[1],))),
            st.tuples(st.sampled_from(sorted(BINARY)), children, children).map(lambda t: Formula(t[0], t[1:])),
        )

    return st.recursive(base, extend, max_leaves=leaves)


def as_list(f: Formula, rng: random.Random) -> Any:
    """List notation with a random accepted word (in a random case) per operator, atoms bare or wrapped, and
    right-nested AND/OR chains written as one list of all their arguments."""
    if f.op == "atom":
        return rng.choice([f.atom, f"reach({f.atom})", f"enter({f.atom})", f"reach( {f.atom} )"])
    if f.op in ("true", "false"):
        return rng.choice([f.op, f.op.upper()])
    word = rng.choice([*WORDS[f.op], *SPELLINGS[f.op]])
    word = rng.choice([word, word.lower()]) if word.isalpha() and len(word) > 1 else word
    args = list(f.args)
    while f.op in ("&", "|") and args[-1].op == f.op and rng.random() < 0.7:  # AND a (AND b c) -> AND a b c
        args[-1:] = list(args[-1].args)
    return [word, *(as_list(a, rng) for a in args)]


def prefix_text(f: Formula, rng: random.Random) -> str:
    if f.op in ("atom", "true", "false"):
        return f.atom or f.op
    return " ".join([rng.choice(SPELLINGS[f.op]), *(prefix_text(a, rng) for a in f.args)])


@given(formulas(PROPS), st.randoms(use_true_random=False))
def test_list_and_prefix_notation_parse_to_the_same_formula(formula: Formula, rng: random.Random) -> None:
    listed = as_list(formula, rng)
    text = prefix_text(formula, rng)
    from_prefix = parse_prefix(text, PROPS)
    assert from_prefix == formula
    assert parse_list(listed, PROPS) == from_prefix, (json.dumps(listed), text)
    assert parse_list(json.dumps(listed), PROPS) == from_prefix  # JSON text
    assert parse_formula(json.dumps(listed, indent=1), PROPS) == from_prefix  # the notation is recognised
    assert parse_formula(repr(listed), PROPS) == from_prefix  # a Python literal, single quotes
    assert parse_formula(text, PROPS) == from_prefix
    assert parse_list(formula.as_list()) == formula  # the canonical rendering round-trips


@pytest.mark.skipif(shutil.which("mona") is None, reason="MONA (Debian package 'mona') is not installed")
@settings(max_examples=30)
@given(formulas(PROPS[:4], leaves=6), st.randoms(use_true_random=False))
def test_list_and_prefix_notation_give_the_same_automaton(formula: Formula, rng: random.Random) -> None:
    """Two MONA runs (the cache cleared between them), one per notation: the same states, guards and atoms."""
    built = []
    for parsed in (parse_prefix(prefix_text(formula, rng)), parse_formula(json.dumps(as_list(formula, rng)))):
        _run_mona.cache_clear()
        try:
            dfa = build_dfa(parsed)
        except FormulaError as exc:  # unsatisfiable: both must say so
            built.append(str(exc))
            continue
        built.append((dfa.initial, dfa.accepting, dfa.transitions, dfa.symbol_of))
    assert built[0] == built[1], formula.prefix()


def test_the_literature_s_example_and_its_spellings() -> None:
    text = '["AND", ["EVENTUALLY", "reach(apple1)"], ["NOT", ["EVENTUALLY", "enter(lab)"]]]'
    assert parse_formula(text, PROPS) == parse_prefix("& F apple1 ! F lab")
    assert parse_formula('["UNTIL", ["NEGATION", "enter(lab)"], "reach(desk_2)"]') == parse_prefix("U ! lab desk_2")
    assert parse_formula('["IMPLY", "kitchen", ["EQUAL", "lab", "hall"]]') == parse_prefix("-> kitchen <-> lab hall")
    assert parse_formula('["ALWAYS", ["OR", "kitchen", "lab", "hall"]]') == parse_prefix("G | kitchen | lab hall")
    assert parse_formula("[] ! lab") == parse_prefix("G ! lab")  # prefix text that starts with the G of "[]"
    assert parse_formula("F reach(apple1)") == parse_prefix("F apple1")  # wrappers in prefix notation too


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ('["SOMETIMES", "kitchen"]', r"formula\[0\] is 'SOMETIMES', not an operator \(accepted: operators"),
        ('["AND", ["WEAKUNTIL", "kitchen", "lab"], "lab"]', r"formula\[1\]\[0\] is 'WEAKUNTIL', not an operator"),
        ('["NOT", "kitchen", "lab"]', r"formula: 'NOT' takes 1 argument\(s\), got 2"),
        ('["UNTIL", "kitchen"]', r"'UNTIL' takes 2 argument\(s\), got 1"),
        ('["UNTIL", "kitchen", "lab", "hall"]', r"'UNTIL' takes 2 argument\(s\), got 3"),
        ('["AND", "kitchen"]', r"'AND' takes 2 or more argument\(s\), got 1"),
        ('["F", "garage"]', "'garage' is neither an operator nor a node id of the mapping"),
        ('["F", "visit(kitchen)"]', r"'visit\(kitchen\)' is neither an operator nor a node id"),
        ('["F", "ALWAYS"]', r"formula\[1\] is the operator 'ALWAYS' where an atom belongs"),
        ('["F", 3]', r"formula\[1\] is int '3'; expected a list or a string"),
        ('["F", {"atom": "lab"}]', "formula\\[1\\] is dict"),
        ('["F", []]', r"formula\[1\] is an empty list"),
        ("[[], []]", r"formula\[1\] is an empty list"),
        ('["F", "kitchen"', "the formula is not a well-formed list"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nests {MAX_DEPTH + 1} lists deep; at most {MAX_DEPTH}"),
        ('["X", ' * 100_000 + '"lab"' + "]" * 100_000, "characters; at most"),
        (json.dumps(["AND", *["lab"] * MAX_FORMULA_SIZE]), f"more than {MAX_FORMULA_SIZE} operators and atoms"),
    ],
)
def test_bad_list_formulas_get_one_clear_error(data: str, error: str) -> None:
    with pytest.raises(FormulaError, match=error):
        parse_formula(data, ["kitchen", "lab", "hall"])


def test_json_booleans_are_the_constants() -> None:
    """JSON writes the constants as true/false, not as strings; they mean what "true"/"false" mean."""
    for value, word in ((True, "true"), (False, "false")):
        assert parse_formula(json.dumps(["ALWAYS", ["OR", value, "lab"]]), ["lab"]) == parse_prefix(f"G | {word} lab")
        assert parse_list(["UNTIL", value, "lab"], ["lab"]) == parse_list(["UNTIL", word, "lab"], ["lab"])


def test_deep_python_lists_are_refused_before_any_recursion_limit() -> None:
    deep: Any = "lab"
    for _ in range(50_000):
        deep = ["X", deep]
    with pytest.raises(FormulaError, match=f"nests more than {MAX_DEPTH} lists deep"):
        parse_list(deep)
    cyclic: list[Any] = ["F"]
    cyclic.append(cyclic)
    with pytest.raises(FormulaError, match="lists deep"):
        parse_list(cyclic)
    just = ["X", "lab"]
    for _ in range(MAX_DEPTH - 1):
        just = ["X", just]
    assert parse_list(just).size() == MAX_DEPTH + 1  # the limit itself is accepted


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.sampled_from(["F", "AND", "lab"])),
    lambda children: st.lists(children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_any_json_value_parses_or_gets_a_formula_error(value: object) -> None:
    for data in (value, json.dumps(value)):
        try:
            parsed = parse_formula(data)
        except FormulaError:
            continue
        assert isinstance(parsed, Formula)


@pytest.mark.skipif(shutil.which("mona") is None, reason="MONA (Debian package 'mona') is not installed")
@pytest.mark.parametrize(
    "answer",
    [
        '["AND", ["EVENTUALLY", "enter(nikos_office)"], ["ALWAYS", ["NOT", "enter(kitchen)"]]]',  # as a string
        ["AND", ["EVENTUALLY", "enter(nikos_office)"], ["ALWAYS", ["NEGATION", "enter(kitchen)"]]],  # as JSON
    ],
)
def test_the_planner_takes_an_llm_formula_in_list_notation(answer: object) -> None:
    grounding = {
        "mapping": [{"phrase": "Niko's office", "node": "nikos_office"}, {"phrase": "kitchen", "node": "kitchen"}]
    }
    planner = make_planner(
        "ltl", transcript(json.dumps(grounding), json.dumps({"formula": answer})), PlannerOptions(budget=FAST)
    )
    result = planner.plan(load_env("office"), "Go to Niko's office without entering the kitchen.")
    assert result.success, result.message
    assert not [c for c in result.calls if c.outcome == "bad_answer"]
    assert "& F nikos_office G ! kitchen" in result.message
