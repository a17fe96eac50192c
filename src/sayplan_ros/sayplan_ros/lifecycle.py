"""Managed (lifecycle) nodes: what every managed node of the stack shares, written once.

As Nav2's servers do, a managed node starts unconfigured and waits for the lifecycle manager
(sayplan_ros.lifecycle_manager) or an operator (`ros2 lifecycle set /planner configure`). Its parameters are
declared at construction, so `ros2 param` sees them while it waits; the read-only ones are read and checked at
configure. A subclass only says what its transitions do, in four methods:

- `configure()`: read the settings, connect (raise with the reason to refuse: the node stays unconfigured)
- `activate()`: take the robot or start serving (raise to refuse: the node stays inactive)
- `deactivate()`: stop motion and release what `activate` took
- `cleanup()`: undo `configure`, leaving nothing behind (servers, timers, threads, sockets); never waits on DDS,
  since `destroy_node` also calls it once the executor may have stopped

A transition that raises logs one error line and keeps its reason (`transition_error`, and the
`~/transition_error` service, std_srvs/Trigger, for the manager), after undoing its own half: a failed configure
is cleaned up, a failed activate deactivated. A deactivate or cleanup that raises goes through ErrorProcessing,
which cleans up, so the node always ends in a state that holds nothing it should not. `is_active` tells the
node's servers whether to serve; a goal for an inactive node is refused with a typed code (NOT_ACTIVE).

`autostart` (parameter, default false) is for a node run alone: it configures and activates itself as soon as it
spins (`ros2 run sayplan_ros planner --ros-args -p autostart:=true`), and a failure ends the program as a failed
start of the stack does (exit 2, one line). The stack leaves it false: its lifecycle manager brings nodes up.

The transitions run on the lifecycle services' thread (the node's default callback group): a transition may wait,
bounded (a deactivate waits for the robot's stop), while every other callback keeps its own group.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import ChangeState
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.timer import Timer
from std_srvs.srv import Trigger

from sayplan_core.node_options import ManagedNodeOptions
from sayplan_core.options import Settings, build, settings_of
from sayplan_ros.clocks import steady_timer
from sayplan_ros.parameters import current, declare_options, declare_settings, unknown_nested, unknown_top_level
from sayplan_ros.runner import describe_error

T = TypeVar("T")

RCLError = _rclpy.RCLError

#: How soon after it is created an `autostart` node starts its transitions (once the executor spins), seconds.
AUTOSTART_DELAY_S = 0.01


class TransitionError(RuntimeError):
    """A transition of a managed node failed; the message is the node's one line (`name: why`)."""


class ManagedNode(LifecycleNode):
    """Base class of the stack's managed nodes (see the module docstring)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._active = False
        self._configured = False
        #: Why the last transition failed ("" after one that succeeded), and the exception itself.
        self.transition_error = ""
        self.transition_exception: BaseException | None = None
        #: Set when this node asks the program to end (an `autostart` that failed): the line the program prints.
        self.exit_reason: str | None = None
        self._error_group = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, "~/transition_error", self._on_transition_error, callback_group=self._error_group)
        managed = declare_options(self, ManagedNodeOptions)
        self._transition_lock = threading.Lock()  # one transition at a time, whoever asks for it
        self._guard_change_state()
        self._autostart_timer: Timer | None = None
        if managed.autostart:
            self._autostart_timer = steady_timer(self, AUTOSTART_DELAY_S, self._autostart)

    def _guard_change_state(self) -> None:
        """rclpy's change_state service raises into the executor on a transition the state does not allow (the
        program would die of a bad request): answered `success: false` here instead, one transition at a time."""
        service = getattr(self, "_service_change_state", None)
        if service is None:  # no communication interface
            return
        serve = service.callback

        def guarded(request: ChangeState.Request, response: ChangeState.Response) -> ChangeState.Response:
            with self._transition_lock:
                try:
                    return serve(request, response)
                except RCLError as exc:
                    self.get_logger().warning(f"refused a lifecycle transition: {describe_error(exc)}")
                    response.success = False
                    return response

        service.callback = guarded

    # ------------------------------------------------------------------ what a subclass says
    def configure(self) -> None:
        """Read and check the settings, connect to what the node needs; raise with the reason to refuse."""

    def activate(self) -> None:
        """Take the robot or start serving; raise with the reason to refuse (the node stays inactive)."""

    def deactivate(self) -> None:
        """Stop motion and release what `activate` took."""

    def cleanup(self) -> None:
        """Undo `configure`: nothing left behind. Never waits on DDS (see the module docstring)."""

    # ------------------------------------------------------------------ helpers for subclasses
    def declare(self, settings: Settings) -> None:
        """Declare a settings table's parameters now; their values are read and checked at configure."""
        declare_settings(self, settings, check=False)

    def read_settings(self, settings: Settings) -> dict[str, Any]:
        """The table's values now, checked (ValueError naming the bad one, or a misspelled nested name the
        launch gave): for `configure`."""
        misspelled = unknown_top_level(self) or unknown_nested(self, settings)
        if misspelled:
            raise ValueError(misspelled)
        return settings.check(current(self, settings))

    def declare_options(self, options: type) -> None:
        """Declare an options dataclass's parameters now; they are read and checked at configure."""
        self.declare(settings_of(options, self.get_name()))

    def read_options(self, options: type[T]) -> T:
        """The options now, typed and checked (ValueError naming the bad one): for `configure`."""
        return build(options, self.read_settings(settings_of(options, self.get_name())))

    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def configured(self) -> bool:
        """Configured (inactive or active): what `configure` made is there."""
        return self._configured

    def bring_up(self) -> None:
        """Configure, then activate, through the real transitions (as the manager would, in this process); raises
        TransitionError with the node's line, or the transition's own exception, when one fails."""
        with self._transition_lock:
            if self.lifecycle_state() == State.PRIMARY_STATE_UNCONFIGURED:
                self.trigger_configure()
                self._raise_if_failed(State.PRIMARY_STATE_INACTIVE)
            if self.lifecycle_state() == State.PRIMARY_STATE_INACTIVE:
                self.trigger_activate()
                self._raise_if_failed(State.PRIMARY_STATE_ACTIVE)

    def lifecycle_state(self) -> int:
        """The primary state's id (lifecycle_msgs/State)."""
        return int(self._state_machine.current_state[0])

    def not_active(self) -> str:
        """Why this node serves nothing now: its lifecycle state, and what brings it back (for a refusal)."""
        name = self.get_fully_qualified_name()
        state = self.lifecycle_state()
        if state == State.PRIMARY_STATE_INACTIVE:
            why = "inactive: paused; its lifecycle manager's RESUME (or `ros2 lifecycle set {} activate`) resumes it"
        elif state == State.PRIMARY_STATE_UNCONFIGURED:
            why = "unconfigured: not started or reset; its lifecycle manager's STARTUP brings it up"
        elif state == State.PRIMARY_STATE_FINALIZED:
            why = "finalized: shut down; restart its process"
        else:
            why = "in a transition (being paused, reset or brought up)"
        return f"{self.get_name()} is not active (lifecycle state {why.format(name)})"

    # ------------------------------------------------------------------ the transitions
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = self._transition("configure", self.configure, self._undo_configure)
        self._configured = result == TransitionCallbackReturn.SUCCESS
        return result

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("activate", self._activate, self._undo_activate)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._active = False  # the servers refuse from now on, before the robot is stopped
        return self._transition("deactivate", self.deactivate, fatal=True)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("clean up", self._cleanup, fatal=True)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """From any primary state: whatever is up is taken down (deactivate, then clean up)."""
        if self._active:
            self._active = False
            self._best_effort("deactivate", self.deactivate)
        if self._configured:
            self._best_effort("clean up", self._cleanup)
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """A deactivate or cleanup raised: clean up what can be, and end unconfigured."""
        self._active = False
        if self._configured:
            self._best_effort("clean up", self._cleanup)
        return TransitionCallbackReturn.SUCCESS

    def _activate(self) -> None:
        self.activate()
        self._active = True

    def _undo_activate(self) -> None:
        self._active = False
        self.deactivate()

    def _undo_configure(self) -> None:
        self._configured = True  # what configure made before it failed is cleaned up like the rest
        self._cleanup()

    def _cleanup(self) -> None:
        try:
            self.cleanup()
        finally:
            self._configured = False

    def _transition(
        self, name: str, work: Callable[[], None], undo: Callable[[], None] | None = None, fatal: bool = False
    ) -> TransitionCallbackReturn:
        try:
            work()
        except Exception as exc:
            self.transition_exception = exc
            reason = f"cannot {name}: {describe_error(exc)}"
            self.transition_error = f"{self.get_name()}: {reason}"
            self.get_logger().error(reason)  # the logger names the node
            if undo is not None:
                self._best_effort(f"undo the failed {name}", undo)
            return TransitionCallbackReturn.ERROR if fatal else TransitionCallbackReturn.FAILURE
        self.transition_error, self.transition_exception = "", None
        return TransitionCallbackReturn.SUCCESS

    def _best_effort(self, name: str, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception as exc:
            self.get_logger().error(f"cannot {name}: {describe_error(exc)}")

    def _raise_if_failed(self, wanted: int) -> None:
        if self.lifecycle_state() == wanted:
            return
        if self.transition_exception is not None:
            raise self.transition_exception
        raise TransitionError(self.transition_error or f"{self.get_name()}: the transition failed")

    def _autostart(self) -> None:
        """`autostart`: up once the executor spins; a failure asks the program to end with the node's line."""
        if self._autostart_timer is not None:
            self.destroy_timer(self._autostart_timer)
            self._autostart_timer = None
        try:
            self.bring_up()
        except Exception as exc:
            self.exit_reason = self.transition_error or describe_error(exc)

    def _on_transition_error(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = not self.transition_error
        response.message = self.transition_error
        return response

    def destroy_node(self) -> None:
        """Whatever is still up is cleaned up (no deactivate: its stop waits on DDS, which may be gone; the
        runner stopped the robots first)."""
        self._active = False
        if self._configured:
            self._best_effort("clean up", self._cleanup)
        super().destroy_node()
