"""Franka-on-Omron logic in sayplan_core: the motions file, skills as primitive programs, what the controllers'
results mean, and what the scene graph learns after a skill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.belief import location_update, reconcile_hand, success_update
from sayplan_core.robots.primitives import Arm, Drive, Grasp, HomeGripper, OpenGripper, Primitive
from sayplan_core.settings import robot_settings
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_franka_omron.motions import (
    MOTION_NAMES,
    MotionError,
    TaughtMotions,
    gripper_outcome,
    gripper_width,
    hand_holds,
    trajectory_outcome,
)
from sayplan_franka_omron.programs import (
    SKILL_MOTIONS,
    TRAVEL,
    GripperSettings,
    ProgramError,
    RobotState,
    available_skills,
    effect_done,
    motion_key,
    plan_skill,
    release_owed,
)

ROOT = Path(__file__).resolve().parents[2]
MOTIONS_FILE = ROOT / "src" / "sayplan_franka_omron" / "examples" / "office_motions.yaml"
OFFICE = load_env("office")
MOTIONS = TaughtMotions.load(MOTIONS_FILE)
GRIP = GripperSettings()
SAYPLAN = load_action_set("sayplan")


def names(program: list[Primitive]) -> list[str]:
    return [p.describe() for p in program]


# ----------------------------------------------------------------------------- the motions file
def test_the_example_file_loads_and_names_office_nodes() -> None:
    assert MOTIONS.joint_names == tuple(f"fr3_joint{i}" for i in range(1, 8))
    assert MOTIONS.travel is not None and MOTIONS.travel.points[0].time_s == 3.0
    pre = MOTIONS.motion("kitchen_cupboard", "pre_grasp")
    assert [p.time_s for p in pre.points] == [1.0, 2.0] and pre.duration_s == 2.0
    assert MOTIONS.grasps["coffee_mug"].width == 0.065
    assert MOTIONS.check_against(OFFICE) == []


def _base() -> dict[str, Any]:
    return {
        "joint_names": ["j1", "j2"],
        "nodes": {"desk": {"approach": [{"positions": [0.0, 1.0], "time": 1.0}]}},
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(joint_names=["j1", "j1"]), "distinct joint names"),
        (lambda d: d.update(joint_names=[]), "distinct joint names"),
        (lambda d: d.update(extra=1), "unknown key"),
        (lambda d: d["nodes"]["desk"].update(wave=[]), "node 'desk': unknown motion"),
        (lambda d: d["nodes"].update(desk=[]), "node 'desk' needs a mapping"),
        (lambda d: d["nodes"]["desk"]["approach"][0].update(positions=[0.0]), "node 'desk', motion 'approach', point 0: positions must be 2"),
        (lambda d: d["nodes"]["desk"]["approach"][0].update(positions=[0.0, float("nan")]), "positions must be 2 finite"),
        (lambda d: d["nodes"]["desk"]["approach"].append({"positions": [0.0, 0.0], "time": 1.0}), "point 1: time must increase"),
        (lambda d: d["nodes"]["desk"]["approach"][0].update(time=0), "point 0: time must increase"),
        (lambda d: d["nodes"]["desk"]["approach"][0].update(speed=1), "a point is"),
        (lambda d: d["nodes"]["desk"].update(approach=[]), "a motion is a list"),
        (lambda d: d.update(grasps={"mug": {"width": 0.5, "force": 10}}), "grasp of 'mug': width"),
        (lambda d: d.update(grasps={"mug": {"width": 0.05}}), "grasp of 'mug': a grasp is"),
        (lambda d: d.update(travel=[{"positions": [0.0, True], "time": 1.0}]), "travel, point 0: positions"),
    ],
)  # fmt: skip
def test_bad_motion_files_are_refused_naming_what_is_wrong(change: Any, message: str) -> None:
    data = _base()
    change(data)
    with pytest.raises(MotionError, match=message):
        TaughtMotions.from_dict(data, "m.yaml")


def test_unreadable_or_huge_motion_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MotionError, match="cannot read motion file"):
        TaughtMotions.load(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("nodes: {desk: [")
    with pytest.raises(MotionError, match="cannot read motion file"):
        TaughtMotions.load(broken)
    huge = tmp_path / "huge.yaml"
    huge.write_text("#" * (4 * 1024 * 1024 + 1))
    with pytest.raises(MotionError, match="over the 4 MB limit"):
        TaughtMotions.load(huge)


def test_a_missing_motion_names_the_node_and_what_it_has() -> None:
    with pytest.raises(
        MotionError, match=r"no 'place' motion was taught for 'kitchen_cupboard' \(taught there: approach"
    ):
        MOTIONS.motion("kitchen_cupboard", "place")


# ----------------------------------------------------------------------------- skills offered
def test_the_catalog_holds_only_what_was_taught() -> None:
    assert available_skills(MOTIONS, SAYPLAN) == SAYPLAN.names()
    assert available_skills(TaughtMotions(), SAYPLAN) == ["goto", "done"]
    only_access = TaughtMotions.from_dict(_base())
    assert available_skills(only_access, SAYPLAN) == ["goto", "access", "done"]


def role_of(step: PlanStep) -> str:
    return SAYPLAN.role(step.action)


# ----------------------------------------------------------------------------- programs
def plan(action: str, target: str, state: RobotState, grip: GripperSettings = GRIP) -> list[Primitive]:
    return plan_skill(PlanStep(action, target), role_of(PlanStep(action, target)), OFFICE, MOTIONS, grip, state)


def run(program: list[Primitive], state: RobotState) -> None:
    for primitive in program:
        state.after(primitive, True)


def test_goto_tucks_the_arm_once_then_drives() -> None:
    state = RobotState()
    program = plan("goto", "pose8", state)
    assert names(program) == ["arm travel", "drive to pose8"]
    run(program, state)
    assert names(plan("goto", "kitchen", state)) == ["drive to kitchen"]
    assert plan("goto", "pose8", state) == []  # already there


def test_pickup_from_a_container_goes_to_the_container() -> None:
    state = RobotState(base_at="kitchen", arm_at=TRAVEL)
    program = plan("pickup", "coffee_mug", state)
    assert names(program) == [
        "drive to kitchen_cupboard",
        "arm approach at kitchen_cupboard",
        "home the gripper",
        "open the gripper",
        "arm pre_grasp at kitchen_cupboard",
        "grasp coffee_mug",
        "arm approach at kitchen_cupboard",
    ]
    grasp = next(p for p in program if isinstance(p, Grasp))
    assert (grasp.width, grasp.force) == (0.065, 30.0)  # the motions file's grasp of the mug
    run(program, state)
    assert state.gripper_homed and state.accessed(OFFICE) == "kitchen_cupboard"
    # putting it back needs a place motion the cupboard was never taught: refused before anything moves
    with pytest.raises(ProgramError, match="no 'place' motion was taught for 'kitchen_cupboard'"):
        plan("release", "coffee_mug", state)
    # at the coffee machine, with the arm at its approach pose, releasing neither drives nor homes again
    state = RobotState("coffee_machine", motion_key("coffee_machine", "approach"), gripper_homed=True)
    assert names(plan("release", "coffee_mug", state)) == [
        "arm place at coffee_machine",
        "open the gripper",
        "arm approach at coffee_machine",
    ]


def test_access_after_open_only_moves_the_arm_back() -> None:
    state = RobotState(base_at="kitchen", arm_at=TRAVEL, gripper_homed=True)
    program = plan("open", "kitchen_cupboard", state)
    assert names(program) == [
        "drive to kitchen_cupboard",
        "arm approach at kitchen_cupboard",
        "open the gripper",
        "arm handle at kitchen_cupboard",
        "grasp kitchen_cupboard",
        "arm handle_open at kitchen_cupboard",
        "open the gripper",
        "arm approach at kitchen_cupboard",
    ]
    run(program, state)
    assert plan("access", "kitchen_cupboard", state) == []
    state.arm_at = None  # e.g. the last motion failed: where the arm is is unknown
    assert names(plan("access", "kitchen_cupboard", state)) == ["arm approach at kitchen_cupboard"]


def test_switches_and_close_move_only_the_arm() -> None:
    state = RobotState(base_at="coffee_machine", arm_at=motion_key("coffee_machine", "approach"))
    assert names(plan("turn_on", "coffee_machine", state)) == [
        "arm turn_on at coffee_machine",
        "arm approach at coffee_machine",
    ]
    state = RobotState(base_at="kitchen_cupboard", arm_at=motion_key("kitchen_cupboard", "approach"))
    assert names(plan("close", "kitchen_cupboard", state)) == [
        "arm handle_close at kitchen_cupboard",
        "arm approach at kitchen_cupboard",
    ]


@pytest.mark.parametrize(
    ("action", "target", "state", "code", "words"),
    [
        ("goto", "kitchen_cupboard", RobotState(), SkillCode.INVALID_TARGET, "room or pose"),
        ("goto", "atlantis", RobotState(), SkillCode.INVALID_TARGET, "not in the robot's scene graph"),
        ("access", "fridge", RobotState(), SkillCode.INVALID_TARGET, "no 'approach' motion was taught for 'fridge'"),
        ("access", "coffee_mug", RobotState(), SkillCode.INVALID_TARGET, "access takes an asset"),
        ("turn_on", "kitchen_cupboard", RobotState(), SkillCode.INVALID_TARGET, "no 'turn_on' motion"),
        ("release", "coffee_mug", RobotState(base_at="kitchen"), SkillCode.SKILL_FAILED, "access one first"),
        ("fly", "kitchen", RobotState(), SkillCode.UNKNOWN_SKILL, "no program"),
    ],
)
def test_refusals_name_the_node(action: str, target: str, state: RobotState, code: SkillCode, words: str) -> None:
    with pytest.raises(ProgramError, match=words) as caught:
        plan(action, target, state)
    assert caught.value.code is code


def test_the_gripper_is_not_homed_while_it_holds_something() -> None:
    graph = OFFICE.copy()
    graph.set_parent("coffee_mug", graph.agent_id or "agent", "inside_hand")
    state = RobotState("coffee_machine", motion_key("coffee_machine", "approach"))  # e.g. the node restarted
    program = plan_skill(
        PlanStep("release", "coffee_mug"), role_of(PlanStep("release", "coffee_mug")), graph, MOTIONS, GRIP, state
    )
    assert not any(isinstance(p, HomeGripper) for p in program)
    assert any(isinstance(p, HomeGripper) for p in plan("release", "coffee_mug", state))


@pytest.mark.parametrize(
    ("grasp", "ok"),
    [({"width": 0.08, "force": 70}, True), ({"width": 0.081, "force": 20}, False), ({"width": 0.05, "force": 71},
     False), ({"width": 0.05, "force": 140}, False), ({"width": -0.001, "force": 20}, False)],
)  # fmt: skip
def test_grasps_are_held_to_the_franka_hands_limits(grasp: dict[str, float], ok: bool) -> None:
    """The Franka Hand: 80 mm stroke, 70 N continuous grasping force (140 N is a peak a grasp cannot hold)."""
    data = {**_base(), "grasps": {"mug": grasp}}
    if ok:
        assert TaughtMotions.from_dict(data).grasps["mug"].force == grasp["force"]
    else:
        with pytest.raises(MotionError, match=r"within 0\.\.0\.08 m and force within \(0, 70\] N"):
            TaughtMotions.from_dict(data)


def test_pickup_with_a_full_hand_is_refused() -> None:
    """A second grasp would open the fingers on what they hold and drop it (issue 23, defect 3 on Franka)."""
    graph = OFFICE.copy()
    graph.set_parent("coffee_mug", graph.agent_id or "agent", "inside_hand")
    with pytest.raises(ProgramError, match="holds 'coffee_mug'") as caught:
        plan_skill(
            PlanStep("pickup", "coffee_mug"),
            role_of(PlanStep("pickup", "coffee_mug")),
            graph,
            MOTIONS,
            GRIP,
            RobotState(),
        )
    assert caught.value.code is SkillCode.SKILL_FAILED


def test_the_fingers_width_is_read_from_franka_gripper_joint_states() -> None:
    assert gripper_width(["fr3_finger_joint1", "fr3_finger_joint2"], [0.0325, 0.0325]) == pytest.approx(0.065)
    for names, positions in [([], [0.01]), (["a", "b", "c"], [0.01, 0.01]), ([], [float("nan"), 0.0]),
                             ([], [0.05, 0.05])]:  # fmt: skip
        with pytest.raises(ValueError, match="gripper"):
            gripper_width(names, positions)


@pytest.mark.parametrize(
    ("width", "sent_to", "holding"),
    [(0.0, None, False), (0.004, 0.08, False), (0.08, None, False), (0.079, 0.08, False), (0.065, None, True),
     (0.065, 0.08, True), (0.02, None, True), (0.05, 0.05, False), (0.04, 0.05, True)],
)  # fmt: skip
def test_what_the_fingers_hold_follows_their_width(width: float, sent_to: float | None, holding: bool) -> None:
    assert hand_holds(width, sent_to, 0.005) is holding


def test_the_robot_state_remembers_where_the_fingers_were_sent() -> None:
    state = RobotState()
    state.after(HomeGripper(), True)
    assert state.fingers_sent_to == 0.08
    state.after(OpenGripper(0.05, 0.1), True)
    assert state.fingers_sent_to == 0.05
    state.after(Grasp("mug", 0.065, 30, 0.05, 0.01, 0.01), True)
    assert state.fingers_sent_to is None
    state.after(OpenGripper(0.08, 0.1), False)
    assert state.fingers_sent_to is None


def _held(graph: Any, update: GraphUpdate) -> str | None:
    from sayplan_core.graph.updates import apply_update

    return apply_update(graph, update).held_object()


def test_the_hand_read_back_decides_what_the_update_says() -> None:
    """Every combination of (graph before holds the mug, the update puts it in the hand, the fingers hold
    something): after the correction the graph holds an object exactly when the fingers do, or the skill ends a
    robot fault (fingers closed on something the graph cannot name)."""
    empty = OFFICE.copy()
    empty.set_attributes(empty.agent_id or "agent", {"location": "kitchen"})
    empty.set_states("kitchen_cupboard", ["open"])
    holding = empty.copy()
    holding.set_parent("coffee_mug", holding.agent_id or "agent", "inside_hand")
    picked, _ = success_update(empty, PlanStep("pickup", "coffee_mug"), SAYPLAN, "kitchen_cupboard", "kitchen", "f")
    released, _ = success_update(
        holding, PlanStep("release", "coffee_mug"), SAYPLAN, "kitchen_cupboard", "kitchen", "f"
    )
    cases = [(empty, picked), (empty, GraphUpdate()), (holding, released), (holding, GraphUpdate())]
    for graph, update in cases:
        for fingers in (False, True):
            mismatch = reconcile_hand(graph, SkillCode.NONE, update, fingers, 0.065 if fingers else 0.0, "f")
            expected = _held(graph, update)
            if (expected is not None) == fingers:
                assert mismatch is None
                continue
            assert mismatch is not None
            after = _held(graph, mismatch.update) if "coffee_mug" not in mismatch.update.remove else None
            if fingers and after is None:  # something the graph cannot name: latched by the skill server
                assert mismatch.code is SkillCode.ROBOT_FAULT and "does not know of" in mismatch.message
            else:
                assert (after is not None) == fingers, (graph.held_object(), update, fingers, mismatch)
            if graph.held_object() is None and not fingers:
                assert mismatch.code is SkillCode.GRASP_FAILED  # the grasp did not hold: the planner may retry
            elif graph.held_object() is not None and not fingers:
                assert mismatch.code is SkillCode.ROBOT_FAULT and mismatch.update.remove == ["coffee_mug"]
            elif graph.held_object() is not None and fingers:
                assert mismatch.code is SkillCode.ROBOT_FAULT and "did not let go" in mismatch.message


def test_open_with_a_full_hand_is_refused() -> None:
    graph = OFFICE.copy()
    graph.set_parent("coffee_mug", graph.agent_id or "agent", "inside_hand")
    with pytest.raises(ProgramError, match="holds 'coffee_mug'") as caught:
        plan_skill(
            PlanStep("open", "kitchen_cupboard"),
            role_of(PlanStep("open", "kitchen_cupboard")),
            graph,
            MOTIONS,
            GRIP,
            RobotState(),
        )
    assert caught.value.code is SkillCode.SKILL_FAILED


def test_a_failure_with_a_handle_in_the_fingers_owes_a_release() -> None:
    """Every failure point of every skill: the fingers are let go exactly when they are closed on something the
    robot is not meant to carry (a handle; a failed grasp counts as closed, the fingers may have stopped on it)."""
    state = RobotState(base_at="kitchen", arm_at=TRAVEL, gripper_homed=True)
    for action, target in [("open", "kitchen_cupboard"), ("pickup", "coffee_mug"), ("close", "kitchen_cupboard"),
                           ("release", "coffee_mug"), ("turn_on", "coffee_machine"), ("goto", "pose12")]:  # fmt: skip
        graph = OFFICE.copy()
        if action == "release":
            graph.set_parent("coffee_mug", graph.agent_id or "agent", "inside_hand")
        step = PlanStep(action, target)
        at = RobotState(**{**vars(state), "base_at": "nikos_desk"}) if action == "release" else state
        program = plan_skill(step, role_of(step), graph, MOTIONS, GRIP, RobotState(**vars(at)))
        for failed in range(len(program)):
            clamped = False  # the oracle: walk the program as the fingers would
            for index, primitive in enumerate(program[: failed + 1]):
                if isinstance(primitive, Grasp) and action != "pickup":
                    clamped = True
                elif isinstance(primitive, OpenGripper) and index < failed:
                    clamped = False
            owed = release_owed(role_of(step), program, failed)
            assert (owed is not None) == clamped, (action, failed, names(program))
            if owed is not None:
                assert owed.width == GRIP.open_width
            # a cancel before primitive `failed` (it never ran): clamped after the last grasp that ran, until an
            # opening finished
            before = any(isinstance(p, Grasp) for p in program[:failed]) and action != "pickup"
            for primitive in program[:failed]:
                if isinstance(primitive, Grasp):
                    before = action != "pickup"
                elif isinstance(primitive, OpenGripper):
                    before = False
            assert (release_owed(role_of(step), program, failed, ran=False) is not None) == before, (action, failed)
    open_program = plan("open", "kitchen_cupboard", RobotState(**vars(state)))
    assert (
        release_owed(role_of(PlanStep("open", "kitchen_cupboard")), open_program, 5) is not None
    )  # handle_open failed
    assert (
        release_owed(role_of(PlanStep("open", "kitchen_cupboard")), open_program, 5, ran=False) is not None
    )  # canceled


def test_the_change_a_skill_makes_is_kept_when_a_later_primitive_fails() -> None:
    """A pickup whose retreat is blocked holds the mug (the update must say so, not drop it mid-air); a release
    whose retreat is blocked has put it down; open/close/switches are done once their own motion ran."""
    state = RobotState(base_at="kitchen", arm_at=TRAVEL, gripper_homed=True)
    pickup = plan("pickup", "coffee_mug", RobotState(**vars(state)))
    grasp = next(i for i, p in enumerate(pickup) if isinstance(p, Grasp))
    step = PlanStep("pickup", "coffee_mug")
    assert [effect_done(role_of(step), pickup, n) for n in range(len(pickup) + 1)] == [
        n > grasp for n in range(len(pickup) + 1)
    ]
    for action, target, motion in [("open", "kitchen_cupboard", "handle_open"), ("close", "kitchen_cupboard",
                                   "handle_close"), ("turn_on", "coffee_machine", "turn_on")]:  # fmt: skip
        program = plan(action, target, RobotState(**vars(state)))
        at = next(i for i, p in enumerate(program) if isinstance(p, Arm) and p.trajectory.name == motion)
        done = [effect_done(role_of(PlanStep(action, target)), program, n) for n in range(len(program) + 1)]
        assert done == [n > at for n in range(len(program) + 1)], action
    goto = plan("goto", "pose8", RobotState())
    assert not any(effect_done(role_of(PlanStep("goto", "pose8")), goto, n) for n in range(len(goto) + 1))


SKILLS = [
    ("goto", "kitchen"), ("goto", "pose12"), ("goto", "nikos_office"), ("access", "kitchen_cupboard"),
    ("access", "coffee_machine"), ("access", "nikos_desk"), ("pickup", "coffee_mug"), ("open", "kitchen_cupboard"),
    ("close", "kitchen_cupboard"), ("turn_on", "coffee_machine"), ("turn_off", "coffee_machine"),
    ("release", "coffee_mug"), ("done", ""),
]  # fmt: skip


@settings(max_examples=150)
@given(st.lists(st.sampled_from(SKILLS), max_size=25), st.booleans())
def test_any_skill_sequence_keeps_the_robot_safe(sequence: list[tuple[str, str]], home_first: bool) -> None:
    """Invariants checked by replaying each program on a model of the robot written here:
    the base only drives with the arm in its travel pose; every arm motion happens with the base at the motion's
    asset (or is the travel pose); the gripper is homed exactly once, before its first use, when asked."""
    grip = GripperSettings(home_first=home_first)
    state = RobotState()
    base: str | None = None
    arm: str | None = None
    homed = 0
    for action, target in sequence:
        try:
            program = plan(action, target, state, grip)
        except ProgramError:
            continue
        for primitive in program:
            if isinstance(primitive, Drive):
                assert arm == TRAVEL, f"{action}({target}) drives with the arm at {arm}"
                base = primitive.node
            elif isinstance(primitive, Arm):
                trajectory = primitive.trajectory
                assert trajectory.name == TRAVEL or trajectory.node == base or OFFICE.parent(trajectory.node) == base
                arm = TRAVEL if trajectory.name == TRAVEL else f"{trajectory.node}/{trajectory.name}"
            elif isinstance(primitive, HomeGripper):
                homed += 1
            elif isinstance(primitive, (Grasp, OpenGripper)):
                assert homed == (1 if home_first else 0), "the gripper was used before it was homed"
            state.after(primitive, True)
        assert (state.base_at, state.arm_at) == (base, arm)
    assert homed <= 1


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.sampled_from(SKILLS), st.none() | st.integers(0, 12), st.booleans(), st.booleans()), max_size=20
    )
)
def test_failures_and_cancels_never_leave_the_robot_driving_clamped_to_furniture(
    sequence: list[tuple[tuple[str, str], int | None, bool, bool]],
) -> None:
    """Each skill may fail at any primitive (or be canceled before it), and the owed opening may itself fail.
    Replayed on a model of the fingers written here: the base never drives while the fingers are closed on anything
    but an object a pickup took; a failed opening stops the robot (a fault: a person frees it)."""
    state = RobotState()
    clamped: str | None = None  # "carried" (a pickup's grasp) or "handle" (anything else)
    for (action, target), stop_at, ran, release_ok in sequence:
        try:
            program = plan(action, target, state)
        except ProgramError:
            continue
        stop = None if stop_at is None or stop_at >= len(program) else stop_at
        for index, primitive in enumerate(program):
            if index == stop and not ran:  # canceled before it
                break
            ok = index != stop
            if isinstance(primitive, Drive):
                assert clamped in (None, "carried"), f"{action}({target}) drives with a {clamped} in the fingers"
            elif isinstance(primitive, Grasp):
                clamped = "carried" if action == "pickup" else "handle"  # a failed grasp may have closed on it too
            elif isinstance(primitive, (OpenGripper, HomeGripper)) and ok:
                clamped = None
            state.after(primitive, ok)
            if not ok:
                break
        if stop is None:
            continue
        owed = release_owed(role_of(PlanStep(action, target)), program, stop, ran)
        assert (owed is not None) == (clamped == "handle"), (action, stop, ran, names(program))
        if owed is not None:
            state.after(owed, release_ok)
            if not release_ok:
                return  # robot_fault: nothing more runs until a person frees the gripper
            clamped = None


# ----------------------------------------------------------------------------- controller results
@pytest.mark.parametrize(
    ("status", "error_code", "code"),
    [
        (4, 0, SkillCode.NONE),
        (5, 0, SkillCode.CANCELED),
        (6, -4, SkillCode.BLOCKED),  # PATH_TOLERANCE_VIOLATED
        (6, -5, SkillCode.BLOCKED),  # GOAL_TOLERANCE_VIOLATED
        (6, -1, SkillCode.ROBOT_FAULT),  # INVALID_GOAL (preempted, or the controller was deactivated)
        (6, -2, SkillCode.ROBOT_FAULT),  # INVALID_JOINTS
        (6, -3, SkillCode.ROBOT_FAULT),  # OLD_HEADER_TIMESTAMP
        (6, -42, SkillCode.ROBOT_FAULT),
        (4, -4, SkillCode.BLOCKED),  # a success status with an error code is not a success
    ],
)
def test_trajectory_results(status: int, error_code: int, code: SkillCode) -> None:
    outcome = trajectory_outcome(status, error_code, "  why\n it\tfailed ", "arm motion 'approach at desk'")
    assert outcome.code is code
    if code is not SkillCode.NONE and code is not SkillCode.CANCELED:
        assert "why it failed" in outcome.message and "approach at desk" in outcome.message


@pytest.mark.parametrize(
    ("status", "success", "error", "grasp", "code"),
    [
        (4, True, "", True, SkillCode.NONE),
        (6, False, "", True, SkillCode.GRASP_FAILED),  # libfranka grasp() returned false: nothing held
        (6, False, "libfranka: not homed", True, SkillCode.ROBOT_FAULT),  # libfranka threw
        (5, False, "", True, SkillCode.CANCELED),
        (6, False, "", False, SkillCode.ROBOT_FAULT),
        (4, False, "", False, SkillCode.ROBOT_FAULT),
    ],
)
def test_gripper_results(status: int, success: bool, error: str, grasp: bool, code: SkillCode) -> None:
    assert gripper_outcome(status, success, error, "grasping mug", grasp).code is code


# ----------------------------------------------------------------------------- scene-graph updates
def test_success_updates_follow_the_action_set() -> None:
    graph = OFFICE.copy()
    graph.set_attributes(graph.agent_id or "agent", {"location": "kitchen"})
    graph.set_states("kitchen_cupboard", ["open"])
    update, warning = success_update(
        graph, PlanStep("pickup", "coffee_mug"), SAYPLAN, "kitchen_cupboard", "kitchen", "franka_omron"
    )
    assert warning == "" and update.source == "franka_omron"
    placed = {u.node.id: (u.parent, u.relation) for u in update.upsert}
    assert placed["coffee_mug"] == (graph.agent_id, "inside_hand")
    assert OFFICE.parent("coffee_mug") == "kitchen_cupboard"  # the graph given was not modified


def test_an_unexpected_success_reports_only_the_location() -> None:
    update, warning = success_update(OFFICE, PlanStep("pickup", "coffee_mug"), SAYPLAN, None, "pose8", "franka_omron")
    assert "did not expect pickup(coffee_mug)" in warning
    assert [(u.node.id, u.node.attributes["location"]) for u in update.upsert] == [(OFFICE.agent_id, "pose8")]


def test_location_updates() -> None:
    assert location_update(OFFICE, "pose9", "x").upsert[0].node.attributes["location"] == "pose9"
    assert location_update(OFFICE, OFFICE.agent_location(), "x").is_empty()
    assert location_update(OFFICE, None, "x").is_empty() and location_update(OFFICE, "atlantis", "x").is_empty()


# ----------------------------------------------------------------------------- configuration
def test_the_robot_config_file_is_declared_and_valid() -> None:
    config = yaml.safe_load((ROOT / "config" / "robots" / "franka_omron.yaml").read_text())
    values = config["franka_omron_skill_server"]["ros__parameters"]
    table = robot_settings("franka_omron")
    checked = table.check(values)
    assert checked["navigation_backend"] == "arcl" and checked["arcl_port"] == 7171
    assert all(s.description for s in table)
    assert set(MOTION_NAMES) >= {m for motions in SKILL_MOTIONS.values() for m in motions}
