"""The small-model aids of the SayPlan family (planners/aids.py), each checked against its definition.

- legal commands: the schema's expand enum is exactly the nodes whose expansion shows something new, found here by
  expanding each candidate in a copy of the view (the definition), over random search histories;
- no repeats: a model that answers as a pure function of its prompt (what temperature 0 is) never sees the same
  prompt twice in a run with the aid, and does without it;
- names in the feedback: the names listed are the nodes the expansion made visible;
- short thoughts: the free-text fields carry the limit, and only when one is set.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transcripts import BAD_PLAN, INSTRUCTION

from sayplan_core.envs import load_env
from sayplan_core.graph.model import GraphError
from sayplan_core.graph.views import GraphView, collapse
from sayplan_core.llm.types import BackendInfo, LlmRequest, LlmResponse
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.planners.aids import (
    FILLER_WORDS,
    REVEALED_NAMES,
    expansion_feedback,
    instruction_matches,
    matches_feedback,
)
from sayplan_core.planners.answers import lite_search_schema, plan_schema, sayplan_schema
from sayplan_core.planners.lookplangraph import LookPlanGraphOptions
from sayplan_core.planners.sayplan import SayPlanOptions
from sayplan_core.sim.action_set import load_action_set

ENVS = {name: load_env(name) for name in ("office", "home")}


def copy_of(view: GraphView) -> GraphView:
    twin = GraphView(view.graph, top_only=view.top_only, with_poses=view.with_poses)
    twin.expanded, twin.memory = list(view.expanded), list(view.memory)
    return twin


def reveals_something(view: GraphView, node: str) -> bool:
    """The definition: expanding `node` now would make at least one node visible that is not."""
    try:
        return bool(copy_of(view).expand(node))
    except GraphError:
        return False


def random_view(env: str, choices: list[int]) -> GraphView:
    """A view after a search history: each choice expands or contracts one of the nodes that allows it."""
    view = collapse(ENVS[env])
    for choice in choices:
        visible = view.visible_ids()
        options = [("expand", n) for n in view.expandable_ids(visible) if n not in view.expanded]
        options += [("contract", n) for n in view.expanded]
        if not options:
            break
        verb, node = options[choice % len(options)]
        if verb == "expand":
            view.expand(node)
        else:
            view.contract(node)
    return view


@given(st.sampled_from(sorted(ENVS)), st.lists(st.integers(0, 10_000), max_size=8))
def test_expand_names_exactly_the_nodes_that_would_show_something_new(env: str, choices: list[int]) -> None:
    view = random_view(env, choices)
    visible = view.visible_ids()
    candidates = [n for n in view.graph.nodes if n in visible]
    expected = sorted(n for n in candidates if reveals_something(view, n))
    assert sorted(view.revealing_ids(visible)) == expected


def variants(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    command = schema["properties"]["command"]
    found = {}
    for variant in command.get("anyOf", [command]):
        (name,) = variant["properties"]["command_name"]["enum"]
        found[name] = variant["properties"]
    return found


@given(st.sampled_from(sorted(ENVS)), st.lists(st.integers(0, 10_000), max_size=6))
def test_legal_schema_has_one_variant_per_command_that_can_name_a_node(env: str, choices: list[int]) -> None:
    view = random_view(env, choices)
    visible = view.visible_ids()
    actions = load_action_set("sayplan")
    legal = SayPlanOptions().legal(view, visible)
    assert legal is not None
    schema = sayplan_schema(actions, visible, view.expandable_ids(visible) + view.expanded, legal)
    found = variants(schema)
    revealing = sorted(n for n in visible if reveals_something(view, n))
    assert ("expand" in found) == bool(revealing)
    if revealing:
        assert found["expand"]["node_name"]["enum"] == revealing
    assert ("contract" in found) == bool(view.expanded)
    if view.expanded:
        assert found["contract"]["node_name"]["enum"] == sorted(view.expanded)
    assert found["plan"]["node_name"]["enum"] == [""]
    for variant in found.values():  # every variant is an object the strict schema dialects accept
        assert set(variant) == {"command_name", "node_name", "plan", "answer"}
    lite = variants(lite_search_schema(view.expandable_ids(visible) + view.expanded, legal))
    assert set(lite) == (set(found) - {"plan"}) | {"done"}


def test_without_the_aid_the_schema_is_the_papers_one() -> None:
    view = collapse(ENVS["office"])
    visible = view.visible_ids()
    schema = sayplan_schema(load_action_set("sayplan"), visible, view.expandable_ids(visible), None)
    command = schema["properties"]["command"]
    assert "anyOf" not in command and command["properties"]["command_name"]["enum"] == ["expand", "contract", "plan"]
    assert SayPlanOptions(legal_commands=False).legal(view, visible) is None


def test_length_limits_are_on_every_free_text_field_and_the_plan_and_only_when_set() -> None:
    view = collapse(ENVS["office"])
    visible = view.visible_ids()
    actions = load_action_set("sayplan")
    for limit in (0, 120):
        schemas = [
            sayplan_schema(actions, visible, view.expandable_ids(visible), None, limit),
            lite_search_schema(view.expandable_ids(visible), None, limit),
            plan_schema(actions, visible, limit),
        ]
        for schema in schemas:
            texts = [p for p in schema["properties"].values() if p.get("type") == "string" and "enum" not in p]
            assert texts
            assert all(p.get("maxLength") == (limit or None) for p in texts)
    for steps in (0, 40):
        plans = [
            sayplan_schema(actions, visible, [], None, 0, steps)["properties"]["command"]["properties"]["plan"],
            plan_schema(actions, visible, 0, steps)["properties"]["plan"],
        ]
        assert all(p.get("maxItems") == (steps or None) for p in plans)


@given(st.sampled_from(["kitchen", "cafeteria", "meeting_room1", "nikos_office", "printing_zone1"]), st.booleans())
def test_expansion_feedback_names_what_became_visible(room: str, names: bool) -> None:
    view = collapse(ENVS["office"])
    before = view.visible_ids()
    revealed = view.expand(room)
    assert set(revealed) == view.visible_ids() - before
    text = expansion_feedback(room, revealed, names)
    assert text.startswith(f"expanded {room}: {len(revealed)} nodes revealed")
    listed = text.split(" nodes revealed", 1)[1].removeprefix(": ").split(" and ")[0]
    shown = [n for n in listed.split(", ") if n]
    if not names:
        assert shown == []
    else:
        assert shown == revealed[:REVEALED_NAMES]
        assert ("more" in text) == (len(revealed) > REVEALED_NAMES)


# ------------------------------------------------------------------ no repeats, with a deterministic model
class PureModel:
    """A stand-in for a model at temperature 0: its answer is a function of the prompt alone.

    It picks one of `answers` by a hash of the last user message, so the same prompt always gets the same answer,
    and different prompts get answers no one chose by hand.
    """

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.info = BackendInfo("pure", "pure-model")
        self.prompts: list[str] = []

    def start_task(self, instruction: str) -> None:
        """Any task."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        prompt = request.messages[-1]["content"]
        self.prompts.append(json.dumps(request.messages))
        pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(self.answers)
        return LlmResponse(json.dumps(self.answers[pick]), prompt_tokens=100, completion_tokens=10)


def command(name: str, node: str = "", plan: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "chain_of_thought": "",
        "reasoning": "",
        "mode": "planning" if name == "plan" else "exploring",
        "command": {"command_name": name, "node_name": node, "plan": plan or [], "answer": []},
    }


ANSWERS = [
    command("expand", "kitchen"),
    command("contract", "kitchen"),
    command("expand", "nikos_office"),
    command("plan", plan=[{"action": a, "target": t} for a, t in BAD_PLAN]),
]


@pytest.mark.parametrize("planner", ["sayplan", "sayplan_lite"])
@given(st.permutations(ANSWERS), st.integers(1, 4))
def test_no_prompt_is_sent_twice_with_the_aid(planner: str, answers: list[dict[str, Any]], count: int) -> None:
    model = PureModel(answers[:count])
    options = PlannerOptions(max_search_steps=12, max_replans=4)
    options.budget.max_calls = 24
    config = SayPlanOptions(legal_commands=False, no_repeat=True)
    make_planner(planner, model, options, config).plan(ENVS["office"], INSTRUCTION)
    assert len(model.prompts) == len(set(model.prompts))


def move(name: str, target: str = "") -> dict[str, Any]:
    return {"chain_of_thought": "short reasoning", "next_move": {"function_name": name, "function_target": target}}


MOVES = [
    move("go_to", "cafeteria"),
    move("look_on", "fruit_bowl_table"),
    move("look_on", "fruit_bowl_table"),  # twice: a look that finds nothing new is a no-op, and says so
    move("go_to", "kitchen"),
    move("pick_up", "coffee_mug"),  # not seen yet: infeasible, feedback
]


@given(st.permutations(MOVES), st.integers(1, 5))
def test_lookplangraph_sends_no_prompt_twice_with_the_aid(answers: list[dict[str, Any]], count: int) -> None:
    model = PureModel(answers[:count])
    options = PlannerOptions()
    options.budget.max_calls = 30
    make_planner("lookplangraph", model, options, LookPlanGraphOptions(no_repeat=True)).plan(
        ENVS["office"], INSTRUCTION
    )
    assert len(model.prompts) == len(set(model.prompts))


class LookingModel(PureModel):
    """Also a function of the prompt alone: go to the cafeteria until its table is in view, then look on it."""

    def __init__(self) -> None:
        super().__init__([move("go_to", "cafeteria"), move("look_on", "fruit_bowl_table")])

    def complete(self, request: LlmRequest) -> LlmResponse:
        prompt = request.messages[-1]["content"]
        self.prompts.append(json.dumps(request.messages))
        answer = self.answers[1] if '"fruit_bowl_table"' in prompt else self.answers[0]
        return LlmResponse(json.dumps(answer), prompt_tokens=100, completion_tokens=10)


def test_without_the_aid_lookplangraph_looks_at_the_same_table_until_its_calls_run_out() -> None:
    """What Qwen2.5-Coder 1.5B did on every subset task (docs/measured/real_model.md): a look that found nothing
    new, asked again with the same prompt, answered alike. With the aid the model hears what it answered there."""
    options = PlannerOptions()
    options.budget.max_calls = 8
    truth = ENVS["office"]
    model = LookingModel()
    make_planner("lookplangraph", model, options, LookPlanGraphOptions(no_repeat=False)).plan(truth, INSTRUCTION)
    assert len(model.prompts) == 8 and len(set(model.prompts)) < 8
    model = LookingModel()
    make_planner("lookplangraph", model, options, LookPlanGraphOptions(no_repeat=True)).plan(truth, INSTRUCTION)
    assert len(model.prompts) == len(set(model.prompts)) == 8
    assert "you saw this same state" in model.prompts[-1] and "look_on(fruit_bowl_table)" in model.prompts[-1]
    assert "call done" in model.prompts[-1] and "plan)" not in model.prompts[-1]  # its own words: it has no plan verb


def test_without_the_aid_a_deterministic_model_repeats_itself() -> None:
    """The failure the aid exists for, shown: a refused command asked again with the same prompt."""
    model = PureModel([command("plan", plan=[{"action": a, "target": t} for a, t in BAD_PLAN])])
    options = PlannerOptions(max_replans=3)
    result = make_planner("sayplan", model, options, SayPlanOptions(no_repeat=False)).plan(ENVS["office"], INSTRUCTION)
    assert not result.success and len(model.prompts) > len(set(model.prompts))
    model = PureModel(model.answers)
    result = make_planner("sayplan", model, options, SayPlanOptions(no_repeat=True)).plan(ENVS["office"], INSTRUCTION)
    assert len(model.prompts) == len(set(model.prompts))
    assert any("You proposed this same plan before" in f for f in result.feedback_history)


# ------------------------------------------------------------------ what the instruction names
@pytest.mark.parametrize(
    ("env", "rooms", "instruction", "listed"),
    [
        (
            "home",
            ["bedroom1", "bedroom2", "bedroom3"],
            "Find me 2 bedrooms with pillows in them.",
            ["pillow1", "pillow2"],
        ),
        ("office", ["printing_zone2"], "I printed a document. Find the document.", ["printed_document"]),
        ("home", ["kitchen"], "Find me a plant that needs watering.", ["potted_plant1"]),
        ("home", ["kitchen"], "Find me the boxes of cereal.", []),
    ],
)
def test_the_matches_are_the_visible_things_the_instruction_names(
    env: str, rooms: list[str], instruction: str, listed: list[str]
) -> None:
    """Tasks of the paper's simple-search set, after the expansions that show their items: plurals name the
    singular, an id's parts are words, rooms and hidden nodes are never listed."""
    view = collapse(ENVS[env])
    for room in rooms:
        view.expand(room)
    assert instruction_matches(view.graph, instruction, view.visible_ids()) == listed
    text = matches_feedback(view.graph, listed)
    for node in listed:
        assert f"{node} (in {view.graph.room_of(node)}" in text
    assert (text == "") == (not listed)


def node_words(name: str) -> set[str]:
    """The definition, written apart from the aid: the lower-case letter runs of a name, id or instruction."""
    out, word = set(), ""
    for char in name.lower() + " ":
        if "a" <= char <= "z":
            word += char
        else:
            out.add(word)
            word = ""
    return {w for w in out if len(w) >= 3}


@given(st.sampled_from(sorted(ENVS)), st.lists(st.integers(0, 10_000), max_size=6), st.data())
def test_a_visible_thing_is_listed_when_the_instruction_says_its_name_or_its_plural(
    env: str, choices: list[int], data: st.DataObject
) -> None:
    view = random_view(env, choices)
    graph, visible = view.graph, view.visible_ids()
    things = sorted(n for n in visible if graph.nodes[n].type in ("asset", "object"))
    target = data.draw(st.sampled_from(things)) if things else None
    plural = data.draw(st.booleans())
    words = sorted(w for w in node_words(graph.nodes[target].name) if w[-1] not in "sxyh") if target else []
    word = data.draw(st.sampled_from(words)) if words else "zzzq"
    instruction = f"Find me the {word + 's' if plural else word}, please."
    listed = instruction_matches(graph, instruction, visible)
    assert set(listed) <= set(things)  # only visible assets and objects
    if target and words and word not in FILLER_WORDS:
        assert target in listed, (target, instruction)
    for node in listed:  # each shares a word with the instruction, up to a plural s
        shared = {w.removesuffix("s") for w in node_words(instruction)} & (
            node_words(graph.nodes[node].name) | node_words(node)
        )
        assert shared, (node, instruction)


class Script:
    """A model that gives `answers` in order (the last one again when they run out)."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers, self.prompts = answers, []  # type: list[dict[str, Any]], list[str]
        self.info = BackendInfo("script", "script")

    def start_task(self, instruction: str) -> None:
        """Any task."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.prompts.append(request.messages[-1]["content"])
        answer = self.answers[min(len(self.prompts), len(self.answers)) - 1]
        return LlmResponse(json.dumps(answer), prompt_tokens=100, completion_tokens=10)


@pytest.mark.parametrize("on", [True, False])
def test_the_model_hears_what_in_view_the_instruction_names_only_with_the_aid(on: bool) -> None:
    found = command("plan", plan=[{"action": "done", "target": ""}])
    found["command"]["answer"] = ["printed_document"]
    model = Script([command("expand", "printing_zone2"), found])
    config = SayPlanOptions(instruction_matches=on)
    result = make_planner("sayplan", model, PlannerOptions(), config).plan(ENVS["office"], "Find the printed document.")
    assert result.success and len(model.prompts) == 2
    assert "In view, named like" not in model.prompts[0]  # nothing it names is visible before the expansion
    assert ("printed_document (in printing_zone2" in model.prompts[1]) == on
