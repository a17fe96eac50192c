"""Dai et al.'s GPT output files hold each formula as a flat JSON list of prefix tokens; `--formula` and every
reader of list notation take them. The oracle is the formula tree each token list is written from (here, from the
definition of prefix notation), with any accepted spelling of each operator."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.cli import main
from sayplan_core.ltl.formula import SPELLINGS, UNARY, Formula, FormulaError, parse_formula

ATOMS = st.sampled_from(["kitchen", "apple1", "lab", "nikos_desk", "reach(mug)"])


def trees(depth: int = 4) -> st.SearchStrategy[tuple[Formula, list[str]]]:
    """(formula, its prefix tokens with random spellings)."""

    def atom(name: str) -> tuple[Formula, list[str]]:
        bare = name.removeprefix("reach(").removesuffix(")")
        return Formula("atom", (), bare), [name]

    def extend(children: st.SearchStrategy[tuple[Formula, list[str]]]) -> st.SearchStrategy[tuple[Formula, list[str]]]:
        def unary(op: str, spelling: str, child: tuple[Formula, list[str]]) -> tuple[Formula, list[str]]:
            return Formula(op, (child[0],)), [spelling, *child[1]]

        def binary(op: str, spelling: str, a: tuple[Formula, list[str]], b: tuple[Formula, list[str]]) -> Any:
            return Formula(op, (a[0], b[0])), [spelling, *a[1], *b[1]]

        ops = st.sampled_from(sorted(SPELLINGS))
        return ops.flatmap(
            lambda op: st.sampled_from(SPELLINGS[op]).flatmap(
                lambda spelling: (
                    st.builds(unary, st.just(op), st.just(spelling), children)
                    if op in UNARY
                    else st.builds(binary, st.just(op), st.just(spelling), children, children)
                )
            )
        )

    return st.recursive(ATOMS.map(atom), extend, max_leaves=8)


@given(trees())
def test_a_flat_token_list_reads_as_the_formula_it_was_written_from(case: tuple[Formula, list[str]]) -> None:
    formula, tokens = case
    if len(tokens) < 2:
        return  # one atom: a one-item list is list notation's atom
    assert parse_formula(json.dumps(tokens)) == formula
    assert parse_formula(tokens) == formula
    assert parse_formula(" ".join(tokens)) == formula


def test_the_cli_plans_a_token_list_from_dai_et_al(capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before: `--formula '["F", "&", ...]'` was read as nested lists, an operator as an argument."""
    tokens = json.dumps(["&", "F", "apple1", "G", "!", "kitchen"])
    assert main(["plan", "--env", "office", "--formula", tokens, "--json"]) == 0
    flat = json.loads(capsys.readouterr().out)
    assert main(["plan", "--env", "office", "--formula", "& F apple1 G ! kitchen", "--json"]) == 0
    joined = json.loads(capsys.readouterr().out)
    assert flat["success"] and flat["full_plan"] == joined["full_plan"]


def test_a_flat_list_that_is_not_a_formula_is_still_refused_by_name() -> None:
    with pytest.raises(FormulaError, match="unexpected tokens"):
        parse_formula(["F", "kitchen", "G", "lab"])
    with pytest.raises(FormulaError, match="tokens; at most"):
        parse_formula(["&"] * 1000)
    with pytest.raises(FormulaError):  # found in review: items of several tokens (or none) were read as prefix
        parse_formula(["&", "F kitchen", "G", "! lab"])
    with pytest.raises(FormulaError):
        parse_formula(["&", "F", "", "kitchen", "G", "lab"])
