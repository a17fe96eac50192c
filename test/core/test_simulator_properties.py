"""Property tests of the simulator over the bundled environments and both bundled action sets (issue 13).

Plans are drawn step by step from the state the plan has reached so far: mostly steps that are feasible there
(so plans get long and reach states such as "holding something in a room full of containers"), sometimes any
verb on any node, an unknown verb or an unknown node. The oracles are independent of the simulator's own
bookkeeping: the native loader's validation, the robot-side `SimulatedWorld` run one skill at a time, and a
scan of the feedback text against the action set and the graph.
"""

from __future__ import annotations

import random
import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.native_format import graph_from_dict, graph_to_dict, validate
from sayplan_core.sim.action_set import ActionSet, action_set_from_dict, builtin_action_sets, load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step, check_step, verify_plan
from sayplan_core.sim.world_state import WorldState

#: Every bundled action set (a new one is covered by adding its YAML) on both bundled environments.
CASES = [(env, actions) for env in ("office", "home") for actions in builtin_action_sets()]
CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(([^()]*)\)")
QUOTED_SUGGESTION = re.compile(r"did you mean '([^']+)'")


@cache
def env(name: str) -> SceneGraph:
    return load_env(name)


def candidates(state: WorldState, rng: random.Random) -> list[str]:
    """Nodes a step could sensibly name now: rooms, poses, the agent's room's contents, what it holds, a few more."""
    graph = state.graph
    pool = graph.ids_of_type("room") + graph.ids_of_type("pose")
    room = state.agent_room()
    if room is not None:
        pool += [n for n in graph.descendants(room) if n in graph.nodes]
    if state.holding:
        pool.append(state.holding)
    everything = list(graph.nodes)
    pool += rng.sample(everything, 5)
    return pool


def draw_plan(graph: SceneGraph, actions: ActionSet, rng: random.Random, length: int) -> list[PlanStep]:
    """Mostly feasible steps, the verb chosen first (so navigation does not crowd out the rest), then maybe
    one step that is anything at all: any verb, another set's verb, any node, an unknown node."""
    state = WorldState.from_graph(graph)
    wrong_verbs = ["fly", "goto", "go_to", "pickup", "pick_up", "access"]
    plan: list[PlanStep] = []
    for _ in range(length):
        if rng.random() < 0.08:
            verb = rng.choice(actions.names() + wrong_verbs)
            plan.append(PlanStep(verb, rng.choice([*rng.sample(list(graph.nodes), 3), "kichen", ""])))
            break
        pool = candidates(state, rng)
        feasible: dict[str, list[PlanStep]] = {}
        for verb in actions.names():
            if verb == "done":
                continue
            steps = [PlanStep(verb, t) for t in pool]
            feasible[verb] = [s for s in steps if check_step(state, s, actions).ok]
        verbs = [v for v, steps in feasible.items() if steps]
        if not verbs:
            break
        step = rng.choice(feasible[rng.choice(verbs)])
        plan.append(step)
        assert apply_step(state, step, actions).ok
    if rng.random() < 0.3:
        plan.append(PlanStep("done"))
    return plan


def check_feedback_names_what_exists(feedback: str, step: PlanStep, graph: SceneGraph, actions: ActionSet) -> None:
    prefix = f"cannot {step.action}({step.target}): " if step.target else f"cannot {step.action}"
    assert feedback.startswith(prefix.rstrip()), feedback
    rest = feedback[len(prefix) :]
    for verb, arg in CALL.findall(rest):
        assert verb in actions, f"feedback names '{verb}', which {actions.name} does not have: {feedback}"
        assert arg in graph.nodes or arg == "<asset>", f"feedback names node '{arg}', which does not exist: {feedback}"
    for suggestion in QUOTED_SUGGESTION.findall(rest):
        assert suggestion in graph.nodes, feedback


@pytest.mark.parametrize(("env_name", "set_name"), CASES)
@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(1, 25))
def test_random_plans(env_name: str, set_name: str, seed: int, length: int) -> None:
    graph = env(env_name)
    actions = load_action_set(set_name)
    plan = draw_plan(graph, actions, random.Random(seed), length)
    result = verify_plan(graph, plan, actions)  # never raises
    if not result.success:
        assert result.step is not None and result.failed_step is not None
        check_feedback_names_what_exists(result.feedback, result.step, graph, actions)
        return
    final = result.final_graph()
    validate(final)  # a plan that verifies always materialises into a valid graph
    graph_from_dict(graph_to_dict(final))
    world = SimulatedWorld(graph, actions)
    for index, step in enumerate(result.executed):  # the plan as run: with the steps an auto set inserted
        outcome = world.execute(step.action, step.target)
        assert outcome.success, f"step {index} {step} verified but failed on the simulated robot: {outcome.message}"
    assert graph_to_dict(world.truth) == graph_to_dict(final)
    assert env(env_name) is graph and graph_to_dict(graph) == graph_to_dict(load_env(env_name))  # never modified


#: Preconditions a random action may list (with an argument where one is needed).
ANY_PRECONDITION = [
    "reachable", "in_agent_room", "hand_empty", "holding_target", "holding_any", "not_held", "not_in_hand",
    "asset_accessed", "under_accessed", "container_open", "target_open", {"has_state": "closed"},
    {"lacks_state": "open"},
]  # fmt: skip
ANY_EFFECT = [
    "move_agent", "set_accessed", "grasp", "place_held", {"place_held": "ontop_of"}, {"place_held": "inside_of"},
    {"set_state": "open"}, {"set_state": "on"},
]  # fmt: skip
NODE_TYPES = ["room", "pose", "asset", "object", "workspace"]


@st.composite
def custom_action_sets(draw: st.DrawFn) -> ActionSet:
    """A user's own action set: any targets, any subset of preconditions (or none) and one or two effects each."""
    actions: dict[str, object] = {}
    for i in range(draw(st.integers(2, 6))):
        actions[f"verb{i}"] = {
            "targets": draw(st.lists(st.sampled_from(NODE_TYPES), min_size=1, max_size=3, unique=True)),
            "affordance": None,
            "preconditions": draw(st.lists(st.sampled_from(ANY_PRECONDITION), max_size=3)),
            "effects": draw(st.lists(st.sampled_from(ANY_EFFECT), min_size=1, max_size=2)),
        }
    actions["done"] = {"targets": [], "affordance": None, "preconditions": [], "effects": ["finish"]}
    return action_set_from_dict({"name": "custom", "actions": actions})


@settings(max_examples=60)
@given(actions=custom_action_sets(), seed=st.integers(0, 2**32 - 1), length=st.integers(1, 12))
def test_plans_under_any_users_action_set_verify_only_if_they_materialise(
    actions: ActionSet, seed: int, length: int
) -> None:
    """Whatever preconditions a set forgets (grasping an asset, putting a box into the bag it carries), a plan that
    verifies must become a valid graph; the oracle is the graph model's own validation, not the simulator."""
    graph = env("office")
    plan = draw_plan(graph, actions, random.Random(seed), length)
    result = verify_plan(graph, plan, actions)  # never raises
    if result.success:
        validate(result.final_graph())
