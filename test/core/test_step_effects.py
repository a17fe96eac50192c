"""One function turns a step's result into a graph update (issue 26): the simulated world, Franka and Spot all
report it through `sayplan_core.sim.effects.step_update`.

The same successful step is run through the three callers (`SimulatedWorld.execute`, Franka's
`belief.success_update`, Spot's `skill_update`) and their updates must be equal. The oracle is independent of that
code: the graph after the step is written here from the action set's declared effects (an object grasped is in
the agent's hand, a release puts it on or in the accessed asset, open swaps closed for open), with the graph's
own editing methods. A bounded property test draws random feasible steps on a bundled environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate, apply_update
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.belief import success_update
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.effects import GRIPPER_ATTRIBUTE, Observed, step_update
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import check_step
from sayplan_core.sim.world_state import WorldState
from sayplan_spot.programs import RobotPose, SpotBelief, skill_update

SETS = ("sayplan", "spot")
#: The state each set_state effect replaces (the oracle's own table, not the graph model's).
OPPOSITE = {"open": "closed", "closed": "open", "on": "off", "off": "on"}


# ----------------------------------------------------------------------------- the oracle
def expected_after(before: SceneGraph, step: PlanStep, actions: ActionSet, accessed: str | None) -> SceneGraph:
    """The graph after `step`, from the action set's declared effects (never from the code under test)."""
    after = before.copy()
    agent = after.agent_id
    assert agent is not None
    for clause in actions.actions[step.action].effects:
        if clause.name == "move_agent":
            after.set_attributes(agent, {"location": step.target})
        elif clause.name == "grasp":
            after.set_parent(step.target, agent, "inside_hand")
        elif clause.name == "place_held":
            held = before.held_object()
            assert held is not None
            if clause.arg in ("ontop_of", "inside_of"):
                where, relation = step.target, str(clause.arg)
            else:
                assert accessed is not None
                where = accessed
                node = before.nodes[where]
                container = (
                    "open" in node.affordances or "contain" in node.affordances or node.attributes.get("container")
                )
                relation = "inside_of" if container and "closed" not in node.states else "ontop_of"
            after.set_parent(held, where, relation)
        elif clause.name == "set_state":
            new = str(clause.arg)
            states = [s for s in after.nodes[step.target].states if s not in (new, OPPOSITE.get(new))]
            after.set_states(step.target, [*states, new])
        else:
            assert clause.name in ("set_accessed", "finish", "reveal"), f"the oracle has no rule for {clause.name}"
    return after


def assert_same_graph(got: SceneGraph, want: SceneGraph, step: PlanStep) -> None:
    assert set(got.nodes) == set(want.nodes), step
    for node_id, node in want.nodes.items():
        mine = got.nodes[node_id]
        assert (mine.type, sorted(mine.states)) == (node.type, sorted(node.states)), (step, node_id)
        assert (got.parent(node_id), got.relation(node_id)) == (want.parent(node_id), want.relation(node_id)), (
            step,
            node_id,
        )
    assert got.agent_location() == want.agent_location(), step


def next_accessed(step: PlanStep, actions: ActionSet, accessed: str | None) -> str | None:
    """The accessed asset after `step`, from its declared effects."""
    for clause in actions.actions[step.action].effects:
        if clause.name == "set_accessed":
            accessed = step.target
        elif clause.name == "move_agent":
            accessed = None
    return accessed


# ----------------------------------------------------------------------------- the three callers
class ThreeRobots:
    """The simulated world, Franka and Spot, each with its own copy of the graph, given the same steps."""

    def __init__(self, graph: SceneGraph, actions: ActionSet) -> None:
        self.actions = actions
        self.world = SimulatedWorld(graph, actions)
        self.franka = graph
        self.spot = graph
        self.spot_belief = SpotBelief()
        self.accessed: str | None = None

    def run(self, step: PlanStep) -> tuple[GraphUpdate, GraphUpdate, GraphUpdate]:
        """The three updates for one step the robots carried out (the simulated world checked it)."""
        before = self.franka
        sim = self.world.execute(step.action, step.target)
        assert sim.success, sim.message
        franka, warning = success_update(before, step, self.actions, self.accessed, None, "franka")
        assert warning == ""
        spot = skill_update(self.spot, step, self.actions, self.spot_belief, SkillCode.NONE, None)
        self.franka = apply_update(self.franka, franka)
        self.spot = apply_update(self.spot, spot)
        self.accessed = next_accessed(step, self.actions, self.accessed)
        assert self.spot_belief.accessed == self.accessed
        return sim.update, franka, spot


def unsourced(update: GraphUpdate) -> GraphUpdate:
    return replace(update, source="")


def check_step_everywhere(robots: ThreeRobots, step: PlanStep) -> None:
    before, accessed = robots.franka, robots.accessed
    sim, franka, spot = robots.run(step)
    assert unsourced(sim) == unsourced(franka) == unsourced(spot), step
    assert (sim.source, franka.source, spot.source) == ("sim_skill_server", "franka", "spot_skill_server")
    want = expected_after(before, step, robots.actions, accessed)
    assert_same_graph(robots.franka, want, step)
    assert_same_graph(robots.spot, want, step)
    assert_same_graph(robots.world.truth, want, step)


def reference_plans(set_name: str) -> Iterator[tuple[str, list[PlanStep]]]:
    """(environment, plan) for every task with a reference plan: the steps the set has, without done."""
    actions = load_action_set(set_name)
    for task in load_tasks():
        plan = [s for s in task.reference_plan if s.action in actions and s.action != "done"]
        if plan:
            yield task.env, plan


@pytest.mark.parametrize("set_name", SETS)
def test_reference_plans_give_the_same_update_through_every_robot(set_name: str) -> None:
    """Every step of every task's reference plan (the steps the set has, while the world accepts them): the
    simulated world, Franka and Spot report the same update, and the graph is what the effects declare."""
    actions = load_action_set(set_name)
    kinds: set[str] = set()
    for env, plan in reference_plans(set_name):
        robots = ThreeRobots(load_env(env), actions)
        for step in plan:
            if not robots.world.would_run(step.action, step.target):
                break  # a step the set lacks (turn_on for Spot) left the world elsewhere: the rest is not valid
            check_step_everywhere(robots, step)
            kinds.add(step.action)
    assert {"goto", "access", "pickup", "release", "open"} <= kinds, kinds


def test_open_close_and_a_put_into_an_open_container() -> None:
    """Steps the reference plans may not cover, on the office: open and close the fridge, put an orange in it."""
    actions = load_action_set("spot")
    robots = ThreeRobots(load_env("office"), actions)
    plan = ["goto(kitchen)", "open(fridge)", "close(fridge)", "open(fridge)", "access(kitchen_bench)"]
    plan += ["pickup(orange)", "access(fridge)", "release(orange)", "close(fridge)"]
    for text in plan:
        action, target = text.rstrip(")").split("(")
        check_step_everywhere(robots, PlanStep(action, target))
    assert robots.franka.parent("orange") == "fridge" and robots.franka.relation("orange") == "inside_of"
    assert robots.spot.nodes["fridge"].states == ("closed",)


def test_lookplangraph_puts_and_what_a_look_reports() -> None:
    """LookPlanGraph's pick_up / put_on on the Spot set: equal everywhere. A look is the one difference: the
    simulated world (and Franka, which has no camera) report the target's children as the graph has them; Spot
    reports what its camera saw (added by its skill server), so its update has the rest and nothing more."""
    actions = load_action_set("spot_lookplangraph")
    robots = ThreeRobots(load_env("office"), actions)
    for text in ["go_to(kitchen)", "pick_up(orange)", "put_on(kitchen_bench)"]:
        action, target = text.rstrip(")").split("(")
        check_step_everywhere(robots, PlanStep(action, target))
    look = PlanStep("look_on", "kitchen_bench")
    sim, franka, spot = robots.run(look)
    assert unsourced(sim) == unsourced(franka)
    children = set(load_env("office").children("kitchen_bench"))
    assert children and "orange" in {u.node.id for u in sim.upsert}
    assert {u.node.id for u in sim.upsert} - {u.node.id for u in spot.upsert} == children - {"kitchen_bench"}
    assert all(u in sim.upsert for u in spot.upsert)


# ----------------------------------------------------------------------------- what differs: the measurements
def test_what_the_robot_measured_wins_over_the_model() -> None:
    """The one function's parameters: a measured place, pose and gripper read-back go into the update; the step's
    effects are the same ones the simulator applies."""
    graph = load_env("office")
    agent = graph.agent_id
    assert agent is not None
    state = WorldState.from_graph(graph)
    observed = Observed(
        held=False, location="pose8", agent_position=(1.0, 2.0, 0.0), agent_attributes={"heading_deg": 90.0}
    )
    effect = step_update(state, PlanStep("goto", "kitchen"), load_action_set("spot"), observed=observed, source="x")
    assert effect.outcome.ok and effect.applied
    assert [u.node.id for u in effect.update.upsert] == ["kitchen", agent]  # the target, then the agent
    upsert = effect.update.upsert[-1]
    attributes = upsert.node.attributes
    assert (attributes["location"], attributes[GRIPPER_ATTRIBUTE], attributes["heading_deg"]) == (
        "pose8",
        "empty",
        90.0,
    )
    assert upsert.node.position == (1.0, 2.0, 0.0) and state.location == "kitchen"  # the model went to the target


def test_a_check_refuses_what_the_graph_did_not_expect_and_trust_applies_it() -> None:
    """Franka and the simulator check the step first (a pickup from afar changes nothing); Spot trusts the robot
    (the object is in the hand, as the robot says)."""
    graph, actions = load_env("office"), load_action_set("spot")
    step = PlanStep("pickup", "coffee_mug")
    checked = step_update(WorldState.from_graph(graph), step, actions)
    assert not checked.outcome.ok and not checked.applied
    assert "coffee_mug" not in {u.node.id for u in checked.update.upsert}
    trusted = step_update(WorldState.from_graph(graph), step, actions, check=False)
    assert trusted.applied and apply_update(graph, trusted.update).held_object() == "coffee_mug"
    assert skill_update(graph, step, actions, SpotBelief(), SkillCode.NONE, None) == replace(
        trusted.update, source="spot_skill_server"
    )


def test_spot_reports_its_pose_and_the_rest_is_the_shared_update() -> None:
    graph, actions = load_env("office"), load_action_set("spot")
    step = PlanStep("goto", "kitchen")
    plain = skill_update(graph, step, actions, SpotBelief(), SkillCode.NONE, None)
    posed = skill_update(graph, step, actions, SpotBelief(), SkillCode.NONE, RobotPose(3.0, 4.0, 0.0, 0.2, "wp-k"))
    agent = posed.upsert[-1].node
    assert agent.position == (3.0, 4.0, 0.2) and agent.attributes["waypoint"] == "wp-k"
    kept = {k: v for k, v in agent.attributes.items() if k not in ("heading_deg", "waypoint")}
    stripped = replace(agent, position=plain.upsert[-1].node.position, attributes=kept)
    assert stripped == plain.upsert[-1].node


# ----------------------------------------------------------------------------- random valid steps
def feasible_steps(graph: SceneGraph, actions: ActionSet, accessed: str | None) -> list[PlanStep]:
    """Every step the simulator accepts now and that changes something, over rooms, poses, the agent's room's
    contents and what it holds (sorted: the draw depends only on hypothesis's choice)."""
    state = WorldState.from_graph(graph)
    state.accessed = accessed
    pool = set(graph.ids_of_type("room") + graph.ids_of_type("pose"))
    room = state.agent_room()
    if room is not None:
        pool.update(graph.descendants(room))
    if state.holding:
        pool.add(state.holding)
    steps = []
    for action in sorted(actions.names()):
        if action == "done":
            continue
        for target in sorted(pool):
            outcome = check_step(state, PlanStep(action, target), actions)
            if outcome.ok and not outcome.note:
                steps.append(PlanStep(action, target))
    return steps


@pytest.mark.parametrize("set_name", SETS)
@settings(max_examples=25, derandomize=True, deadline=None, database=None)
@given(picks=st.lists(st.integers(0, 2**16), min_size=1, max_size=8))
def test_random_valid_steps_give_the_same_update_through_every_robot(set_name: str, picks: list[int]) -> None:
    actions = load_action_set(set_name)
    robots = ThreeRobots(load_env("office"), actions)
    for pick in picks:
        steps = feasible_steps(robots.franka, actions, robots.accessed)
        assert steps, "the office always has a feasible step (goto)"
        check_step_everywhere(robots, steps[pick % len(steps)])


@pytest.mark.parametrize("text", ["done(agent)", "pickup(agent)", "open(agent)"])
def test_a_step_naming_the_agent_reports_it_once(text: str) -> None:
    """A step that names the agent node (done takes an optional argument; a wrong one is refused) reports the agent
    once, where it is: an update listing it twice is refused whole by the graph (before issue 26 it was)."""
    graph = load_env("office")
    action, target = text.rstrip(")").split("(")
    assert target == graph.agent_id
    update = SimulatedWorld(graph, "sayplan").execute(action, target).update
    assert [u.node.id for u in update.upsert].count(target) == 1
    assert apply_update(graph, update).agent_location() == graph.agent_location()
