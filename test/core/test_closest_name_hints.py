"""Which names a "did you mean ...?" hint offers (sayplan_core.closest), against difflib's ratio on the stems
computed here from the definition: the words must be alike, a shared number or separator is not enough."""

from __future__ import annotations

import difflib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.closest import CUTOFF, close_names
from sayplan_core.envs import load_env
from sayplan_core.graph.model import UnknownNodeError


def stem_here(name: str) -> str:
    bare = re.sub(r"[\s_.:-]*[0-9]+$", "", name.casefold())
    return bare or name.casefold()


def stem_ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, stem_here(a), stem_here(b), autojunk=False).ratio()


def test_a_shared_number_is_no_likeness() -> None:
    """Found as a hostile user: a missing `oven-1` was offered `agent-1`."""
    assert close_names("oven-1", ["agent-1", "kitchen", "fridge"]) == []
    assert close_names("oven-1", ["agent-1", "oven", "oven_2", "stove"])[:2] == ["oven", "oven_2"]
    assert close_names("Coffee_Mug", ["coffee_mug", "coffee_machine"])[0] == "coffee_mug"
    assert close_names("kitchen_cupbord", ["kitchen_cupboard", "kitchen_sink"]) == ["kitchen_cupboard"]


def test_an_unknown_node_of_a_real_graph_names_no_unlike_node() -> None:
    assert "did you mean" not in str(UnknownNodeError("oven-1", ["agent-1", "kitchen"]))  # difflib: agent-1
    graph = load_env("office")
    with pytest.raises(UnknownNodeError) as caught:
        graph.node("coffee_machin")
    assert caught.value.suggestion == "coffee_machine"


names = st.text(alphabet=st.sampled_from("abcmo_-1290 X"), min_size=1, max_size=12)


@given(names, st.lists(names, max_size=12), st.integers(min_value=1, max_value=4))
def test_every_hint_is_alike_in_its_words_and_the_alike_are_offered(name: str, pool: list[str], count: int) -> None:
    found = close_names(name, pool, count)
    assert len(found) <= count and len(set(found)) == len(found) and set(found) <= set(pool)
    assert name not in found
    for candidate in found:
        assert stem_ratio(name, candidate) >= CUTOFF, candidate
    alike = {c for c in pool if c != name and stem_ratio(name, c) >= CUTOFF}
    assert len(found) == min(count, len(alike))
    best = max((stem_ratio(name, c) for c in alike), default=None)
    if best is not None:
        assert stem_ratio(name, found[0]) == best  # the most alike stem comes first


def test_a_huge_name_gets_no_hint_and_costs_nothing() -> None:
    assert close_names("x" * 100_000, ["x" * 10]) == []


def test_an_id_no_node_can_have_is_named_short_and_gets_no_hint() -> None:
    """A 5 MB id came back whole in the message, after a closest-name search over all of it."""
    from sayplan_core.envs import load_env
    from sayplan_core.graph import limits
    from sayplan_core.graph.model import UnknownNodeError

    office = load_env("office")
    huge = "kitchen" + "k" * 5_000_000
    error = UnknownNodeError(huge, office.nodes)
    assert len(str(error)) < 2 * limits.MAX_ID_CHARS and "5000007 characters" in str(error), str(error)[:400]
    assert error.suggestion is None
    assert UnknownNodeError("kitchn", office.nodes).suggestion == "kitchen"  # a plausible id still gets its hint
