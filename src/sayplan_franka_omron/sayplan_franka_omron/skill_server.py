"""franka_omron_skill_server: SayPlan's skills on a Franka arm mounted on an Omron LD base.

Each execute_skill goal becomes a program of primitives (sayplan_core.robots.programs),
checked against the robot's live scene graph, the site file and the taught motions
before anything moves. The base is driven over ARCL (`navigation_backend: arcl`) or
through Nav2 (`nav2`); the arm replays taught motions on a FollowJointTrajectory
controller and the gripper takes franka_gripper's Grasp / Move / Homing goals. A cancel
stops whatever runs (ARCL `stop`, or a cancel of the running action goal). The result
carries the scene-graph update: the action set's effects after a success (or after a
failure that came once the skill's change was made: a pickup whose retreat is blocked
still holds the object), the agent's location from the base's localisation after a
failed drive. A failure or cancel with a handle in the fingers opens them before the
skill ends; if they will not open the skill ends robot_fault.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.belief import location_update, success_update
from sayplan_core.robots.binding import SiteBinding, Target
from sayplan_core.robots.franka import TaughtMotions
from sayplan_core.robots.navigation import Pose2D, TargetError, base_target, nearest_place, pose_of
from sayplan_core.robots.primitives import Arm, Drive, Grasp, HomeGripper, OpenGripper, Outcome, Primitive
from sayplan_core.robots.programs import (
    GripperSettings,
    ProgramError,
    RobotState,
    available_skills,
    effect_done,
    plan_skill,
    release_owed,
)
from sayplan_core.settings import FRANKA_OMRON_SKILL_SERVER_SETTINGS as SETTINGS
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_franka_omron.arcl_link import ArclBase
from sayplan_franka_omron.arm import FrankaArm
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.navigation.action_call import sleep
from sayplan_ros.parameters import current, declare_settings
from sayplan_ros.runner import run_nodes
from sayplan_ros.skill_server import SkillContext, SkillServer

ROBOT = "franka_omron"


class Base(Protocol):
    def check(self, target: Target) -> None: ...
    async def drive(
        self, target: Target, feedback: Callable[[str, float], None], cancel_requested: Callable[[], bool]
    ) -> Outcome: ...
    async def locate(self) -> Pose2D | None: ...
    def cancel(self) -> None: ...
    def destroy(self) -> None: ...


class Nav2Base:
    """The base through Nav2's NavigateToPose (any robot whose base runs Nav2)."""

    def __init__(self, server: FrankaOmronSkillServer, action: str, frame: str, behavior_tree: str) -> None:
        from sayplan_ros.navigation.nav2_client import Nav2Client

        self._server = server
        self._client = Nav2Client(server, action, frame, behavior_tree, server.callback_group)

    def check(self, target: Target) -> None:
        pose_of(target)

    async def drive(
        self, target: Target, feedback: Callable[[str, float], None], cancel_requested: Callable[[], bool]
    ) -> Outcome:
        wait = float(self._server.get_parameter("server_wait_s").value)
        return await self._client.drive(
            pose_of(target), target.node, wait, self._server.sleep, feedback, cancel_requested
        )

    async def locate(self) -> Pose2D | None:
        return self._client.last_pose

    def cancel(self) -> None:
        self._client.cancel()

    def destroy(self) -> None:
        self._client.destroy()


class FrankaOmronSkillServer(SkillServer):
    def __init__(self, node_name: str = "franka_omron_skill_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        settings = declare_settings(self, SETTINGS)
        site_file, motions_file = str(settings["site_file"]), str(settings["motions_file"])
        self._site = SiteBinding.load(site_file) if site_file else SiteBinding()
        self._motions = TaughtMotions.load(motions_file) if motions_file else TaughtMotions()
        self._actions = load_action_set("sayplan")
        self._state = RobotState()
        self._canceling = False
        self._checked_graph = False
        self._base: Base = self._make_base(settings)
        self._arm: FrankaArm | None = None
        if self._motions.nodes:
            self._arm = FrankaArm(
                self,
                str(settings["arm_action"]),
                str(settings["gripper_grasp_action"]),
                str(settings["gripper_move_action"]),
                str(settings["gripper_homing_action"]),
                self.callback_group,
            )
        self._graph = GraphFollower(self, self.callback_group)
        skills = available_skills(self._motions)
        self.serve(SkillCatalog.of(ROBOT, [self._actions], skills))
        self.get_logger().info(
            f"{ROBOT}: base through {settings['navigation_backend']}, skills {', '.join(skills)}"
            + ("" if self._arm else " (no motions_file: the arm is not used)")
        )

    @property
    def callback_group(self) -> Any:
        return self._group

    async def sleep(self, seconds: float) -> None:
        await sleep(self, seconds, self._group)

    def _make_base(self, settings: dict[str, Any]) -> Base:
        if settings["navigation_backend"] == "nav2":
            return Nav2Base(self, str(settings["nav2_action"]), self._site.frame, str(settings["nav2_behavior_tree"]))
        host = str(settings["arcl_host"]).strip()
        if not host:
            raise ValueError("arcl_host must name the Omron base when navigation_backend is arcl")
        env = str(settings["arcl_password_env"])
        password = os.environ.get(env)
        if password is None:
            raise ValueError(f"the ARCL password is read from the environment variable {env}, which is not set")
        return ArclBase(
            self, host, int(settings["arcl_port"]), password, float(settings["arcl_timeout_s"]), self._group
        )

    # ------------------------------------------------------------------ one skill
    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        self._canceling = False
        values = current(self, SETTINGS)
        graph = await self.graph_for_step(self._graph, context, float(values["graph_wait_s"]))
        if isinstance(graph, SkillResult):
            return graph
        self._check_files(graph)
        gripper = GripperSettings(
            grasp_width=float(values["grasp_width"]),
            grasp_force=float(values["grasp_force"]),
            grasp_speed=float(values["grasp_speed"]),
            epsilon_inner=float(values["grasp_epsilon"]),
            epsilon_outer=float(values["grasp_epsilon"]),
            open_width=float(values["open_width"]),
            speed=float(values["gripper_speed"]),
            home_first=bool(values["home_gripper"]),
        )
        try:
            program = plan_skill(step, graph, self._motions, gripper, self._state)
            targets = {p.node: base_target(graph, self._site, p.node) for p in program if isinstance(p, Drive)}
            for target in targets.values():
                self._base.check(target)
        except ProgramError as exc:
            return SkillResult(False, exc.code, str(exc))
        except TargetError as exc:
            return SkillResult(False, SkillCode.INVALID_TARGET, f"{step}: {exc}")
        for index, primitive in enumerate(program):
            if self._canceled(context):
                canceled = Outcome(SkillCode.CANCELED, f"canceled before {primitive.describe()}")
                return await self._stopped(step, program, index, False, canceled, graph, values)
            context.feedback(f"{step}: {primitive.describe()}", index / max(len(program), 1))
            outcome = await self._run_primitive(primitive, targets, values, context)
            self._state.after(primitive, outcome.ok)
            if not outcome.ok:
                return await self._stopped(step, program, index, True, outcome, graph, values)
        location = step.target if step.action == "goto" else graph.agent_location()
        return SkillResult(True, SkillCode.NONE, f"{step} done", self._effect_update(step, graph, location))

    def _effect_update(self, step: PlanStep, graph: SceneGraph, location: str | None) -> GraphUpdate:
        """The step's change to the world as a graph update (what the action set says it does)."""
        update, warning = success_update(graph, step, self._actions, self._state.accessed(graph), location, ROBOT)
        if warning:
            self.get_logger().warning(warning)
        return update

    async def _stopped(
        self,
        step: PlanStep,
        program: list[Primitive],
        index: int,
        ran: bool,
        outcome: Outcome,
        graph: SceneGraph,
        values: dict[str, Any],
    ) -> SkillResult:
        """The skill stopped at primitive `index` (it failed, or with `ran` False a cancel came before it): let go
        of a handle, and report where the agent is, plus the skill's change to the world when it already happened
        (a pickup whose retreat was blocked holds the object: the update says so)."""
        primitive = program[index]
        outcome = await self._let_go_if_owed(step, program, index, ran, outcome, values)
        location = graph.agent_location()
        if ran and isinstance(primitive, Drive):
            location = await self._where(graph) or location
        update = location_update(graph, location, ROBOT)
        if effect_done(step, program, index):
            update = self._effect_update(step, graph, location)
        return SkillResult(False, outcome.code, f"{step}: {outcome.message}", update)

    async def _let_go_if_owed(
        self,
        step: PlanStep,
        program: list[Primitive],
        index: int,
        ran: bool,
        outcome: Outcome,
        values: dict[str, Any],
    ) -> Outcome:
        """After a failure or cancel with a handle in the fingers, open them (a cancel cannot stop this); if they
        will not open, the robot is stuck to the furniture: a fault the planner cannot fix."""
        owed = release_owed(step, program, index, ran)
        if owed is None:
            return outcome
        released = await self._run_primitive(owed, {}, values, None)
        self._state.after(owed, released.ok)
        if released.ok:
            return outcome
        return Outcome(
            SkillCode.ROBOT_FAULT,
            f"{outcome.message}; then the gripper did not let go of '{step.target}' ({released.message}): "
            "free it by hand before the robot moves",
        )

    async def _run_primitive(
        self, primitive: Primitive, targets: dict[str, Target], values: dict[str, Any], context: SkillContext | None
    ) -> Outcome:
        """Run one primitive; with no context (a clean-up owed after a failure) it cannot be canceled."""
        canceled = (lambda: False) if context is None else (lambda: self._canceled(context))
        feedback = (lambda _text, _progress: None) if context is None else context.feedback
        wait = float(values["server_wait_s"])
        if isinstance(primitive, Drive):
            return await self._base.drive(targets[primitive.node], feedback, canceled)
        arm = self._arm
        if arm is None:  # programs only use the arm when motions were taught, which creates it
            return Outcome(SkillCode.INTERNAL_ERROR, f"{primitive.describe()}: no arm configured")
        if isinstance(primitive, Arm):
            tolerance = float(values["arm_time_tolerance_s"])
            return await arm.follow(primitive.trajectory, tolerance, wait, self.sleep, canceled)
        if isinstance(primitive, Grasp):
            return await arm.grasp(primitive, wait, self.sleep, canceled)
        if isinstance(primitive, OpenGripper):
            return await arm.open(primitive.width, primitive.speed, wait, self.sleep, canceled)
        if isinstance(primitive, HomeGripper):
            return await arm.home(wait, self.sleep, canceled)
        return Outcome(SkillCode.INTERNAL_ERROR, f"unknown primitive {primitive!r}")

    def _canceled(self, context: SkillContext) -> bool:
        return self._canceling or context.cancel_requested()

    async def _where(self, graph: SceneGraph) -> str | None:
        """The room or pose node nearest to where the base says it is."""
        pose = await self._base.locate()
        return None if pose is None else nearest_place(graph, self._site, pose[0], pose[1])

    def _check_files(self, graph: SceneGraph) -> None:
        """Warn once about site or motion entries for nodes this building does not have."""
        if self._checked_graph:
            return
        self._checked_graph = True
        for what, missing in (
            ("site file", self._site.check_against(graph)),
            ("motions file", self._motions.check_against(graph)),
        ):
            if missing:
                self.get_logger().warning(f"the {what} names nodes the scene graph lacks: {', '.join(missing[:10])}")

    def on_cancel(self) -> None:
        self._canceling = True
        self._base.cancel()
        if self._arm is not None:
            self._arm.cancel()

    def destroy_node(self) -> None:
        self._base.destroy()
        if self._arm is not None:
            self._arm.destroy()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_nodes("franka_omron_skill_server", lambda: [FrankaOmronSkillServer()], args)
