"""Planner views (collapse / expand / contract with memory), prompt text and token counts."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.cli.env_commands import token_table
from sayplan_core.envs import load_env
from sayplan_core.graph import GraphError, tokens
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import SUPPORTED_ENCODINGS, count_tokens, encoding_for_model
from sayplan_core.graph.views import collapse


def test_collapse_shows_floors_rooms_and_the_agent() -> None:
    """Pose nodes are left to the path planner unless asked for (issue 13: they cost the office 10 points)."""
    graph = load_env("office")
    view = collapse(graph)
    types = {graph.nodes[n].type for n in view.visible_ids()}
    assert types == {"floor", "room", "agent"}
    assert "pose" not in json.loads(view.text())["nodes"]
    assert not any("pose" in link for link in json.loads(view.text())["links"])
    kept = collapse(graph, with_poses=True)
    assert {graph.nodes[n].type for n in kept.visible_ids()} == {"floor", "room", "pose", "agent"}
    assert "pose7<->agent" in json.loads(kept.text())["links"]


def test_floor_expansion_leaves_out_poses_unless_kept() -> None:
    graph = load_env("home")
    view = collapse(graph, top_only=True)
    revealed = view.expand("basement")
    assert "bedroom5" in revealed and not any(graph.nodes[n].type == "pose" for n in revealed)
    kept = collapse(graph, top_only=True, with_poses=True)
    assert "downstairs1" in kept.expand("basement")


def test_expand_contract_and_memory() -> None:
    graph = load_env("office")
    view = collapse(graph)
    revealed = view.expand("kitchen")
    assert "fridge" in revealed and "orange" in revealed
    assert any(a["id"] == "fridge" for a in json.loads(view.text())["nodes"]["asset"])
    view.expand("nikos_office")
    hidden = view.contract("kitchen")
    assert "fridge" in hidden and "fridge" not in view.visible_ids()
    assert view.memory == ["kitchen", "nikos_office"]
    assert view.expanded == ["nikos_office"]


def test_expand_errors_name_the_node() -> None:
    view = collapse(load_env("office"))
    with pytest.raises(GraphError, match="cannot expand 'orange': it is an object"):
        view.expand("orange")
    with pytest.raises(GraphError, match="not visible"):
        view.expand("fridge")
    with pytest.raises(GraphError, match="does not exist; did you mean 'kitchen'"):
        view.expand("kichen")
    with pytest.raises(GraphError, match="not expanded"):
        view.contract("kitchen")
    view.expand("kitchen")
    with pytest.raises(GraphError, match="'kitchen' is already expanded"):
        view.expand("kitchen")


def test_top_only_collapse_then_floor_expansion() -> None:
    graph = load_env("home")
    view = collapse(graph, top_only=True)
    assert {graph.nodes[n].type for n in view.visible_ids()} == {"floor", "agent"}
    revealed = view.expand("basement")
    assert "bedroom5" in revealed and "downstairs1" not in revealed
    assert "bed1" not in view.visible_ids()


def test_prompt_text_is_compact_json_with_states() -> None:
    graph = load_env("office")
    data = json.loads(to_prompt_text(graph, ["kitchen", "fridge", "orange", "agent"]))
    fridge = data["nodes"]["asset"][0]
    assert fridge == {
        "id": "fridge",
        "room": "kitchen",
        "states": ["closed"],
        "affordances": ["open", "close", "release"],
    }
    assert data["nodes"]["object"][0]["state"] == "ontop_of(kitchen_bench)"
    assert "kitchen<->fridge" in data["links"]


def test_token_counts_use_real_tokenizers() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", "o200k_base") == 2
    with pytest.raises(ValueError, match="unknown tokenizer"):
        count_tokens("x", "p99k")
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("gpt-4") == "cl100k_base"


@pytest.mark.parametrize("env", ["office", "home"])
def test_collapsed_graph_is_much_smaller(env: str) -> None:
    table = token_table(load_env(env))
    assert table["collapsed_tokens"] < table["collapsed_with_poses_tokens"] < table["full_tokens"]
    assert table["reduction_percent"] > 80  # SayPlan reports 82% on its own office
    assert set(table["groups"]) >= {"room", "asset", "object", "agent"}


def test_remaining_plan_path_for_rviz() -> None:
    from sayplan_core.viz.markers import graph_markers, layer_counts, remaining_path

    graph = load_env("office")  # the agent is at pose7
    steps = [("goto", "pose8"), ("goto", "kitchen"), ("access", "fridge"), ("goto", "cafeteria")]
    assert remaining_path(graph, steps, 0) == ["pose7", "pose8", "kitchen", "cafeteria"]
    assert remaining_path(graph, steps, 2) == ["pose7", "cafeteria"]
    assert remaining_path(graph, steps, -1) == [] and remaining_path(graph, steps[2:3], 0) == []
    specs = graph_markers(graph, remaining_path(graph, steps, 0))
    assert layer_counts(specs) == {"rooms": 37, "poses": 25, "assets": 86, "objects": 88, "agents": 1}
    assert len(next(s for s in specs if s.ns == "plan").points) == 4


# ----------------------------------------------------------------------------- counting text of any size
_TEXT_CHARS = "abcXYZéß日本 0123456789\n\t\",:;{}[]()<>='.-_!?"


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.text(alphabet=_TEXT_CHARS, min_size=0, max_size=400),
    st.integers(min_value=4, max_value=60),
    st.sampled_from(SUPPORTED_ENCODINGS),
)
def test_counting_in_pieces_equals_counting_at_once_wherever_a_cut_is_safe(
    text: str, chunk: int, encoding: str
) -> None:
    """The oracle is the tokenizer itself on the whole text: every piece cut where no token spans adds up to
    its count exactly. A cut that found no safe place (possible only in text without one) is reported."""
    from sayplan_core.graph import tokens

    original = tokens.CHUNK_CHARS
    tokens.CHUNK_CHARS = chunk
    try:
        pieces = tokens._pieces(text)
        chunked = tokens.count_tokens(text, encoding)
    finally:
        tokens.CHUNK_CHARS = original
    assert "".join(pieces) == text and all(len(p) <= chunk for p in pieces[:-1])
    cuts = [sum(len(p) for p in pieces[:i]) for i in range(1, len(pieces))]
    if all(tokens.safe_cut(text, at) for at in cuts):
        assert chunked == len(tokens._encoding(encoding).encode(text)), (text, cuts)


def test_a_thousand_room_building_is_counted_though_the_tokenizer_refuses_it_whole() -> None:
    """`sayplan env tokens` once failed on a 1,000-room building ("exceeds chunk limit 200000")."""
    from sayplan_core.envs.generator import BuildingSpec, generate_building
    from sayplan_core.graph import tokens

    text = to_prompt_text(generate_building(BuildingSpec(floors=10, rooms_per_floor=100)))
    total = tokens.count_tokens(text)
    assert total > 200_000
    pieces = tokens._pieces(text)
    # every cut where no token spans (so the property above makes the total exact)
    assert len(pieces) > 1 and all(
        tokens.safe_cut(text, sum(len(p) for p in pieces[:i])) for i in range(1, len(pieces))
    )


@pytest.mark.parametrize(("floors", "rooms_per_floor"), [(1, 200), (2, 5), (2, 76), (3, 60)])
def test_the_token_table_shows_the_floor_level_start_where_sayplan_takes_it(floors: int, rooms_per_floor: int) -> None:
    """Review31: `sayplan env tokens` showed only the room-level collapse, not the floors SayPlan starts from above
    `floor_view_rooms` (150) rooms on two floors or more."""
    from sayplan_core.envs.generator import BuildingSpec, generate_building

    graph = generate_building(BuildingSpec(floors=floors, rooms_per_floor=rooms_per_floor))
    table = token_table(graph)
    if floors < 2:
        assert "floor_level_tokens" not in table
        return
    rooms = floors * rooms_per_floor
    assert table["sayplan_starts_at_floors"] is (rooms > 150)
    floor_ids = sorted(graph.ids_of_type("floor"))
    # the floors-only prompt names every floor and no room; it is smaller than the room-level one
    text = collapse(graph, top_only=True).text()
    assert all(f in text for f in floor_ids) and not any(r in text for r in graph.ids_of_type("room"))
    assert 0 < table["floor_level_tokens"] < table["collapsed_tokens"]
    expected = 100 * (1 - table["floor_level_tokens"] / table["full_tokens"])
    assert abs(table["floor_level_reduction_percent"] - expected) <= 0.005


def test_token_counts_are_exact_when_a_piece_would_end_before_a_slash() -> None:
    """The last place before the 50,000th character that looks safe is a line break followed by "/" (and the one
    before it, after "q", is safe)."""
    text = "ab " * 16000 + 'q",' + "ab " * 659 + "}\n/" + "cd " * 300 + '"x",' * 12000
    for encoding in tokens.SUPPORTED_ENCODINGS:
        assert tokens.count_tokens(text, encoding) == len(tokens._encoding(encoding).encode(text)), encoding
