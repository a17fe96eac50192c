"""A hostile peer sweeps the running stack (issue 39, "hostile input v3"): random, oversized and deeply nested
requests to every service, topic and action the composed `sayplan_stack` offers, and random parameter changes on
every node, then three checks. No process died (the stack's process is alive, its stderr holds no traceback, and
SIGINT still ends it with 0); a valid request after the sweep is answered (`plan_path`, `get_scene_graph`,
`describe_skills`, `is_active`); and the graph `get_scene_graph` returns equals a replay, in version order, of the
updates the server published on `scene_graph_updates` during the sweep (applied with `apply_update` to the office
it started from) in nodes, parents, relations, states, attributes and navigation edges.

What is reached is discovered at run time through the rclpy graph API: every service of the stack's nodes
(their own, the parameter and type-description services, the lifecycle services and the actions' `_action`
services), every topic they subscribe to (graph topics, `active_plan`, the actions' status and feedback topics),
and every action (a goal through an action client, then canceled). A request is a random instance of its type
built from the type's introspection (`SLOT_TYPES`: nested messages, bounded and unbounded strings and
sequences, arrays), with occasional 100,000-character strings, 20,000-item sequences and JSON nested 33, 600 or
10,000 levels deep in string fields; each request holds at most `BUDGET` characters and items in all. A
parameter change sets existing names to random values of random types (the right type with out-of-range values
too) and a few unknown names, through `set_parameters` or `set_parameters_atomically`; a change that is accepted
must be what `get_parameters` then returns. The explicit phase sends one request per target shaped by a seeded
generator with one extreme forced (oversized strings, long sequences or deep JSON, in turn), then every command
of the lifecycle manager and every transition of each managed node by id and by label. Each generated example
sends an office update from `random_updates` (valid or not, so accepted updates interleave with the hostile
traffic), a parameter change on a random node, and a request hypothesis builds for a random target.

Kept out, and why (everything else is sent as drawn):

- The lifecycle manager's SHUTDOWN and a managed node's `change_state` to finalized (transitions 5, 6, 7 or the
  label "shutdown"): a finalized node cannot come back without a new process, which ends the experiment by
  design. They are sent as RESET and as a deactivate instead. Everything a peer can do short of that is sent
  (PAUSE, RESET, RESUME, STARTUP, configure, cleanup, activate, deactivate, unknown ids and labels); after each
  request the test checks that a PAUSE or RESET that was answered success leaves `is_active` saying "not active",
  and brings the stack back with STARTUP, which must succeed with every managed node ACTIVE.
- Nothing else: a `ParameterValue.type` outside 0..9 once ended the whole stack (rclpy's parameter service raised
  ValueError in the executor); it is sent like any other value, and kept as its own test below.

Every time limit is a hang guard (HANG_GUARD_S), never a speed target.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import math
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

import yaml
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from random_updates import OFFICE, exact, updates
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters, SetParametersAtomically
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from rosidl_parser import definition as idl
from stack_paths import BIN, INSTRUCTION, ROOT, TRANSCRIPT, WS_ENV
from std_srvs.srv import Trigger
from test_shutdown import EntryPoint, start

from sayplan_core.envs import load_env
from sayplan_core.graph.updates import apply_update
from sayplan_interfaces.msg import GraphUpdate
from sayplan_interfaces.srv import ApplyGraphUpdate, DescribeSkills, GetSceneGraph, ManageLifecycleNodes, PlanPath
from sayplan_ros.conversions import msg_to_graph, msg_to_update, update_to_msg
from sayplan_ros.qos import GRAPH_UPDATES_QOS
from sayplan_ros.stack import managed_names, stack_specs

pytestmark = [
    pytest.mark.ros,
    pytest.mark.serial,
]  # alone: a CPU-heavy sweep on a whole stack: it would stretch the bounds of the tests beside it
needs_install = pytest.mark.skipif(
    not (BIN / "sayplan_stack").exists(), reason=f"{BIN}/sayplan_stack is not built: run scripts/colcon_build.sh"
)
T = TypeVar("T")

#: A guard against a hang, never a speed target: how long one request, goal or check may take on a loaded machine.
HANG_GUARD_S = 30.0
#: How long the stack may take to come up (six nodes, the planner's LLM probe) on a loaded machine.
START_GUARD_S = 120.0
OVERSIZED = 100_000  # characters of an oversized string
LONG = 20_000  # items of a long sequence
DEPTHS = (33, 600, 10_000)  # nesting of the deep JSON strings: just over the limit, far over, absurd
BUDGET = 2_500_000  # characters and items in one request, at most (bounds each example's memory)
SHAPES = ("oversized", "long", "deep")  # the extreme each explicit example forces, in turn
NODES = [spec.name for spec in stack_specs("sim")]
MANAGED = managed_names("sim")
#: Words a peer that knows the stack would send: node ids, skills, action sets, planners, parameter names.
KNOWN = [
    *sorted({*list(OFFICE.nodes)[:40], "kitchen", "cafeteria", "pose8", "coffee_mug", "nikos_desk"}),
    "goto", "access", "pickup", "release", "open", "close", "turn_on", "turn_off", "done", "sayplan", "spot",
    "lookplangraph", "llm_as_planner", "ltl", "embodiedrag", "abstract", "dijkstra", "astar", "collapse",
    "expand", "ontop_of", "inside", "in", "connected_to", "configure", "activate", "deactivate", "cleanup",
    "timeout_s", "max_calls", "skill_delay_s", "failures", "method", "env", "use_sim_time", "office", "home",
    INSTRUCTION, "", " ", "/", "..", "/dev/zero", "../../etc/passwd", "nan", "-1", "1e400",
]  # fmt: skip
TEXT = st.characters(codec="utf-8", exclude_characters="\x00")


# ---------------------------------------------------------------------------------------------- random instances
class Drawn:
    """The builder's choices drawn by hypothesis (the generate phase)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))  # type: ignore[no-any-return]

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))  # type: ignore[no-any-return]

    def real(self, width: int) -> float:
        return self.draw(st.floats(width=width))  # type: ignore[no-any-return]

    def text(self, max_size: int) -> str:
        return self.draw(st.text(TEXT, max_size=min(max_size, 24)))  # type: ignore[no-any-return]


class Forced:
    """The builder's choices from a seeded generator, with one shape (SHAPES) taken wherever it is offered (the
    explicit phase: every target gets each extreme deterministically, whatever hypothesis draws)."""

    def __init__(self, seed: int, shape: str) -> None:
        self.random, self.shape = random.Random(seed), shape

    def pick(self, options: Sequence[T]) -> T:
        return self.shape if self.shape in options else self.random.choice(options)  # type: ignore[return-value]

    def integer(self, lo: int, hi: int) -> int:
        return self.random.choice([lo, hi, self.random.randint(lo, hi)])

    def real(self, width: int) -> float:
        return self.random.choice([math.nan, math.inf, -math.inf, -1.0, 1e38 if width == 32 else 1e308, 0.5])

    def text(self, max_size: int) -> str:
        return "".join(self.random.choice("aé☺{[\"'\\ \n") for _ in range(min(max_size, 12)))


Choices = Drawn | Forced
_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "short": 16, "long": 32, "long long": 64}
_FLOATS = {"float": 32, "double": 64, "long double": 64}


def _int_range(typename: str) -> tuple[int, int]:
    unsigned = typename.startswith("u")
    bits = _INTS[typename.removeprefix("unsigned ").removeprefix("u")]
    return (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def interface(type_name: str) -> Any:
    """The class of a message, service or action named as the graph API names it ("pkg/srv/Name")."""
    package, kind, name = type_name.split("/")
    return _member(importlib.import_module(f"{package}.{kind}"), name)


#: An action's parts, by the suffix rosidl gives them ("ExecuteSkill_Goal", "ExecuteSkill_SendGoal", ...).
_ACTION_PARTS = {"Goal": "Goal", "Result": "Result", "Feedback": "Feedback", "SendGoal": "Impl.SendGoalService",
                 "GetResult": "Impl.GetResultService", "FeedbackMessage": "Impl.FeedbackMessage"}  # fmt: skip


def _member(module: Any, name: str) -> Any:
    if hasattr(module, name):
        return getattr(module, name)
    action, _, part = name.partition("_")
    found = getattr(module, action)
    for attribute in _ACTION_PARTS[part].split("."):
        found = getattr(found, attribute)
    return found


def _class_of(slot: idl.NamespacedType) -> Any:
    return _member(importlib.import_module(".".join(slot.namespaces)), slot.name)


@dataclass
class Builder:
    """A random instance of any ROS message from its introspection, within `left` characters and items."""

    choices: Choices
    left: int = BUDGET
    shapes: Counter[str] = field(default_factory=Counter)

    def message(self, cls: Any) -> Any:
        msg = cls()
        for name, slot in zip(cls.get_fields_and_field_types(), cls.SLOT_TYPES, strict=True):
            setattr(msg, name, self.value(slot))
        return msg

    def value(self, slot: Any) -> Any:
        if isinstance(slot, idl.NamespacedType):
            return self.message(_class_of(slot))
        if isinstance(slot, idl.AbstractGenericString):
            return self.string(getattr(slot, "maximum_size", None), isinstance(slot, idl.AbstractWString))
        if isinstance(slot, idl.Array):
            return [self.value(slot.value_type) for _ in range(slot.size)]
        if isinstance(slot, idl.AbstractSequence):
            return self.sequence(slot)
        return self.basic(slot.typename)

    def basic(self, typename: str) -> Any:
        self.left -= 1
        if typename == "boolean":
            return self.choices.pick([False, True])
        if typename == "octet":
            return bytes([self.choices.integer(0, 255)])
        if typename in ("char", "wchar"):
            return chr(self.choices.integer(0, 127 if typename == "char" else 0xD7FF))
        if typename in _FLOATS:
            return self.choices.real(_FLOATS[typename])
        lo, hi = _int_range(typename)
        kind = self.choices.pick(["any", "edge", "small"])  # small: enumerations (commands, transitions, types)
        if kind == "edge":
            return self.choices.pick([lo, hi, max(lo, -1), min(hi, 1)])
        return self.choices.integer(max(lo, -1), min(hi, 10)) if kind == "small" else self.choices.integer(lo, hi)

    def string(self, bound: int | None, wide: bool) -> str:
        limit = min(bound or OVERSIZED, OVERSIZED)
        kinds = ["text", "known", "json", "empty"]
        if self.left > OVERSIZED:
            kinds.append("oversized")
        if self.left > 2 * DEPTHS[-1] * 5:
            kinds.append("deep")
        kind = self.choices.pick(kinds)
        self.shapes[kind] += 1
        if kind == "text":
            text = self.choices.text(limit)
        elif kind == "known":
            text = self.choices.pick(KNOWN)
        elif kind == "json":
            text = json.dumps({self.choices.text(8): [self.choices.integer(-9, 9), self.choices.real(64), None]})
        elif kind == "oversized":
            text = self.choices.pick(["x", "é", "☺", "[", '"']) * limit
        elif kind == "deep":
            depth = self.choices.pick(DEPTHS)
            opener, closer = self.choices.pick([("[", "]"), ('{"a":', "}"), ('{"a":[', "]}")])
            text = opener * depth + "1" + closer * depth
        else:
            text = ""
        if wide:
            text = "".join(c for c in text if ord(c) < 0xD800)
        text = text[:limit]
        self.left -= len(text)
        return text

    def sequence(self, slot: Any) -> list[Any]:
        bound = getattr(slot, "maximum_size", None) or LONG
        kinds = ["empty", "few"]
        if self.left > 2 * min(bound, LONG):
            kinds.append("long")
        kind = self.choices.pick(kinds)
        self.shapes[f"sequence:{kind}"] += 1
        if kind == "empty":
            return []
        if kind == "few":
            return [self.value(slot.value_type) for _ in range(self.choices.integer(1, min(3, bound)))]
        count = min(bound, LONG)
        item = Builder(self.choices, self.left // count, self.shapes)  # one item, repeated: memory stays bounded
        one = item.value(slot.value_type)
        self.left -= count * max(1, self.left // count - item.left)
        return [one] * count


@st.composite
def instances(draw: st.DrawFn, cls: Any) -> Any:
    """A random instance of the ROS message class `cls` (a request, a goal, a topic's message)."""
    return Builder(Drawn(draw)).message(cls)


# ---------------------------------------------------------------------------------------------- what is sent
@dataclass(frozen=True)
class Target:
    kind: str  # service, topic, action or parameters
    name: str  # the service, topic or action name; the node's for parameters
    type: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


_SHUTDOWN_TRANSITIONS = {
    Transition.TRANSITION_UNCONFIGURED_SHUTDOWN,
    Transition.TRANSITION_INACTIVE_SHUTDOWN,
    Transition.TRANSITION_ACTIVE_SHUTDOWN,
}


def tame(request: Any) -> Any:
    """What the sweep does not send (see the module's docstring), rewritten in place into what it may send."""
    if isinstance(request, ChangeState.Request):
        transition = request.transition
        if transition.id in _SHUTDOWN_TRANSITIONS or transition.label.strip() == "shutdown":
            transition.id, transition.label = Transition.TRANSITION_DEACTIVATE, ""
    if isinstance(request, ManageLifecycleNodes.Request) and request.command == ManageLifecycleNodes.Request.SHUTDOWN:
        request.command = ManageLifecycleNodes.Request.RESET
    return request


_VALUE_FIELDS = {
    ParameterType.PARAMETER_BOOL: "bool_value",
    ParameterType.PARAMETER_INTEGER: "integer_value",
    ParameterType.PARAMETER_DOUBLE: "double_value",
    ParameterType.PARAMETER_STRING: "string_value",
    ParameterType.PARAMETER_BYTE_ARRAY: "byte_array_value",
    ParameterType.PARAMETER_BOOL_ARRAY: "bool_array_value",
    ParameterType.PARAMETER_INTEGER_ARRAY: "integer_array_value",
    ParameterType.PARAMETER_DOUBLE_ARRAY: "double_array_value",
    ParameterType.PARAMETER_STRING_ARRAY: "string_array_value",
}
_SLOTS = dict(zip(ParameterValue.get_fields_and_field_types(), ParameterValue.SLOT_TYPES, strict=True))


def parameter_change(choices: Choices, described: dict[str, Any]) -> tuple[str, list[ParameterMsg]]:
    """A SetParameters(Atomically) request's parameters for one node: existing names with random values of random
    types (its own type out of its range too), and sometimes an unknown name."""
    builder = Builder(choices, BUDGET // 8)
    names = sorted(described)
    changes: dict[str, ParameterMsg] = {}
    for _ in range(choices.integer(1, 4)):
        kind = choices.pick(["plausible", "own_type", "out_of_range", "other_type", "unknown"])
        name = choices.pick(names)
        descriptor = described[name]
        kind_type = descriptor.type if kind in ("plausible", "own_type", "out_of_range") else choices.integer(0, 255)
        if kind == "unknown":
            name = choices.pick([name + "_", name.upper(), "no_such_parameter", builder.string(256, False) or "x"])
        value = ParameterValue(type=kind_type)
        if kind_type in _VALUE_FIELDS:
            slot_name = _VALUE_FIELDS[kind_type]
            setattr(value, slot_name, builder.value(_SLOTS[slot_name]))
        if kind == "out_of_range":
            out_of_range(choices, descriptor, value)
        if kind == "plausible":  # what an operator would try: small numbers, known words
            value.integer_value, value.double_value = choices.integer(0, 100), choices.pick([0.5, 1.0, 5.0, 60.0])
            value.string_value, value.bool_value = choices.pick(KNOWN), choices.pick([False, True])
        changes[name] = ParameterMsg(name=name, value=value)
    return choices.pick(["set_parameters", "set_parameters_atomically"]), list(changes.values())


def out_of_range(choices: Choices, descriptor: Any, value: ParameterValue) -> None:
    """The value just past the descriptor's range, or an extreme of its type when it declares none."""
    if value.type == ParameterType.PARAMETER_INTEGER:
        lo, hi = _int_range("int64")
        if descriptor.integer_range:
            limit = descriptor.integer_range[0]
            lo, hi = max(lo, limit.from_value - 1), min(hi, limit.to_value + 1)
        value.integer_value = choices.pick([lo, hi, -1, 0])
    elif value.type == ParameterType.PARAMETER_DOUBLE:
        extremes = [math.nan, math.inf, -math.inf, -1.0, 0.0, 1e308]
        if descriptor.floating_point_range:
            limit = descriptor.floating_point_range[0]
            extremes += [limit.from_value - 1.0, limit.to_value + 1.0]
        value.double_value = choices.pick(extremes)
    elif value.type == ParameterType.PARAMETER_STRING:
        value.string_value = choices.pick(["", "x" * OVERSIZED, "[" * DEPTHS[1], "nonsense", "/dev/zero"])


def same_value(sent: ParameterValue, got: ParameterValue) -> bool:
    if sent.type != got.type:
        return False
    slot = _VALUE_FIELDS.get(sent.type)
    if slot is None:
        return True
    a, b = getattr(sent, slot), getattr(got, slot)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if sent.type == ParameterType.PARAMETER_DOUBLE_ARRAY:
        return len(a) == len(b) and all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True))
    return list(a) == list(b) if not isinstance(a, str | bool | int) else a == b


# ---------------------------------------------------------------------------------------------- the peer
def fingerprint(msg: GraphUpdate) -> bytes:
    """The same for an update as sent and as received: its fields after one trip through CDR (float32 rounded),
    not its CDR bytes (their padding is not initialised)."""
    return hashlib.sha256(repr(deserialize_message(serialize_message(msg), GraphUpdate)).encode()).digest()


class Peer:
    """The test's node on the stack's domain: the targets it found, its clients and publishers, and what the
    server published on scene_graph_updates."""

    def __init__(self, ros: Any, entry: EntryPoint) -> None:
        self.ros, self.entry = ros, entry
        self.node = ros.node("hostile_peer")
        self.clients: dict[str, Any] = {}
        self.publishers: dict[str, Any] = {}
        self.actions: dict[str, Any] = {}
        self.sent_hashes: set[bytes] = set()  # what this peer published on scene_graph_updates itself
        self.updates: dict[int, list[GraphUpdate]] = {}
        self.reached: Counter[str] = Counter()
        self.shapes: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.parameters: dict[str, dict[str, Any]] = {}
        self.node.create_subscription(GraphUpdate, "/scene_graph_updates", self._update, GRAPH_UPDATES_QOS)
        self.targets: list[Target] = []
        self.last_success = False  # the last manage_nodes or change_state request was answered success

    def _update(self, msg: GraphUpdate) -> None:
        if fingerprint(msg) not in self.sent_hashes:
            self.updates.setdefault(int(msg.version), []).append(msg)

    def client(self, srv_type: Any, name: str) -> Any:
        if name not in self.clients:
            self.clients[name] = self.node.create_client(srv_type, name)
        return self.clients[name]

    def call(self, srv_type: Any, name: str, request: Any) -> Any:
        """The answer; fails at once, naming the request, when the stack has exited (no waiting out the guard)."""
        self.check_alive(request)
        client = self.client(srv_type, name)
        try:
            self.ros.wait_for(
                lambda: client.service_is_ready() or self.entry.proc.poll() is not None, HANG_GUARD_S, name
            )
            self.check_alive(request)
            future = client.call_async(request)
            self.ros.wait_for(lambda: future.done() or self.entry.proc.poll() is not None, HANG_GUARD_S, name)
        except AssertionError as exc:
            raise AssertionError(f"{exc} (request {str(request)[:300]})\n{self.entry.output()}") from None
        self.check_alive(request)
        return future.result()

    def check_alive(self, request: Any) -> None:
        if self.entry.proc.poll() is not None:
            raise AssertionError(
                f"sayplan_stack exited {self.entry.proc.returncode} (request {str(request)[:300]})\n"
                f"{self.entry.output()[-3000:]}"
            )

    # -------------------------------------------------------------- discovery
    def discover(self) -> None:
        """Every service, subscribed topic and action of the stack's nodes, once DDS lists them all."""
        self.ros.wait_for(self._complete, timeout=START_GUARD_S, what="the stack's services, topics and actions")
        found = self._found()
        while True:  # until two looks a second apart agree (discovery of a busy process comes in bursts)
            time.sleep(1.0)
            again = self._found()
            if again == found:
                break
            found = again
        self.targets = sorted(found, key=str)
        for target in self.targets:
            if target.kind == "topic":
                qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)  # fmt: skip
                self.publishers[target.name] = self.node.create_publisher(interface(target.type), target.name, qos)
            elif target.kind == "action":
                self.actions[target.name] = ActionClient(self.node, interface(target.type), target.name)
            elif target.kind == "parameters":
                self.parameters[target.name] = self._describe(target.name)
        for name, publisher in self.publishers.items():
            infos = self.node.get_subscriptions_info_by_topic(name)
            readers = sum(info.node_name != self.node.get_name() for info in infos)
            self.ros.wait_for(lambda p=publisher, n=readers: p.get_subscription_count() >= n,
                              timeout=HANG_GUARD_S, what=f"the stack's subscribers of {name}")  # fmt: skip

    def _complete(self) -> bool:
        names = {t.name for t in self._found()}
        wanted = {"/apply_graph_update", "/plan_path", "/lifecycle_manager/manage_nodes", "/execute_task",
                  "/execute_skill", "/plan_task", "/scene_graph_updates", "/active_plan"}  # fmt: skip
        return wanted <= names and all(f"/{n}/set_parameters" in names for n in NODES)

    def _found(self) -> set[Target]:
        found: set[Target] = set()
        for name in NODES:
            found.add(Target("parameters", name))
            with contextlib.suppress(Exception):  # a node not discovered yet
                for service, types in self.node.get_service_names_and_types_by_node(name, "/"):
                    found.add(Target("service", service, types[0]))
                    if service.endswith("/_action/send_goal"):
                        action = service.removesuffix("/_action/send_goal")
                        found.add(Target("action", action, types[0].removesuffix("_SendGoal")))
                for topic, types in self.node.get_subscriber_names_and_types_by_node(name, "/"):
                    found.add(Target("topic", topic, types[0]))
        return found

    def _describe(self, node: str) -> dict[str, Any]:
        names = self.call(ListParameters, f"/{node}/list_parameters", ListParameters.Request()).result.names
        described = self.call(DescribeParameters, f"/{node}/describe_parameters",
                              DescribeParameters.Request(names=names))  # fmt: skip
        return dict(zip(names, described.descriptors, strict=True))

    # -------------------------------------------------------------- sending
    def send(self, target: Target, choices: Choices, request: Any = None) -> None:
        self.reached[str(target)] += 1
        if target.kind == "parameters":
            self.change_parameters(target.name, choices)
        elif target.kind == "service":
            srv = interface(target.type)
            request = tame(request if request is not None else self._built(choices, srv.Request))
            self.outcomes[f"{target.name}: answered"] += self.call(srv, target.name, request) is not None
        elif target.kind == "topic":
            msg = self._built(choices, interface(target.type))
            if target.name == "/scene_graph_updates":
                self.sent_hashes.add(fingerprint(msg))
            self.publishers[target.name].publish(msg)
        else:
            self.send_goal(target, self._built(choices, interface(target.type).Goal))

    def _built(self, choices: Choices, cls: Any) -> Any:
        builder = Builder(choices)
        msg = builder.message(cls)
        self.shapes.update(builder.shapes)
        return msg

    def send_goal(self, target: Target, goal: Any) -> None:
        """A goal through an action client: accepted or not, and an accepted one canceled and ended."""
        client = self.actions[target.name]
        assert client.wait_for_server(timeout_sec=HANG_GUARD_S), f"{target.name}: no server\n{self.entry.output()}"
        sent = client.send_goal_async(goal)
        self.ros.wait_for(sent.done, HANG_GUARD_S, f"{target.name} to answer a goal")
        handle = sent.result()
        self.outcomes[f"{target.name}: {'accepted' if handle.accepted else 'rejected'}"] += 1
        if handle.accepted:
            result = handle.get_result_async()
            handle.cancel_goal_async()
            self.ros.wait_for(result.done, HANG_GUARD_S, f"{target.name}'s goal to end after its cancel")

    def change_parameters(self, node: str, choices: Choices) -> None:
        service, parameters = parameter_change(choices, self.parameters[node])
        if service == "set_parameters":
            answer = self.call(SetParameters, f"/{node}/set_parameters", SetParameters.Request(parameters=parameters))
            accepted = [p for p, r in zip(parameters, answer.results, strict=True) if r.successful]
        else:
            request = SetParametersAtomically.Request(parameters=parameters)
            answer = self.call(SetParametersAtomically, f"/{node}/set_parameters_atomically", request)
            accepted = parameters if answer.result.successful else []
        self.outcomes[f"/{node} parameters: {len(accepted)} of {len(parameters)} set"] += 1
        if accepted:  # an accepted value is the node's value now
            names = [p.name for p in accepted]
            got = self.call(GetParameters, f"/{node}/get_parameters", GetParameters.Request(names=names)).values
            for sent, value in zip(accepted, got, strict=True):
                assert same_value(sent.value, value), (node, sent.name, sent.value, value)

    # -------------------------------------------------------------- after each request
    def settle(self, target: Target, request: Any) -> None:
        """The process lives; goals are canceled; a PAUSE or RESET answered success shows as "not active"; the
        stack is brought back with STARTUP when any managed node is not active."""
        assert self.entry.proc.poll() is None, f"the stack died after {target}\n{self.entry.output()}"
        if target.kind == "action" or "/_action/" in target.name:
            for action in self.actions:  # an empty CancelGoal request cancels every goal of the action
                self.call(interface("action_msgs/srv/CancelGoal"), f"{action}/_action/cancel_goal",
                          interface("action_msgs/srv/CancelGoal").Request())  # fmt: skip
        is_active = self.call(Trigger, "/lifecycle_manager/is_active", Trigger.Request())
        if isinstance(request, ManageLifecycleNodes.Request) and request.command in (1, 3) and self.last_success:
            assert not is_active.success and is_active.message.startswith("not active"), is_active.message
        states = [self.call(GetState, f"/{n}/get_state", GetState.Request()).current_state.id for n in MANAGED]
        if is_active.success and all(s == State.PRIMARY_STATE_ACTIVE for s in states):
            return
        self.outcomes["STARTUP after the request"] += 1
        request = ManageLifecycleNodes.Request(command=ManageLifecycleNodes.Request.STARTUP)
        answer = self.call(ManageLifecycleNodes, "/lifecycle_manager/manage_nodes", request)
        assert answer.success, f"STARTUP after {target}: {answer.message}\n{self.entry.output()}"
        states = [self.call(GetState, f"/{n}/get_state", GetState.Request()).current_state.id for n in MANAGED]
        assert all(s == State.PRIMARY_STATE_ACTIVE for s in states), (target, states)
        assert self.call(Trigger, "/lifecycle_manager/is_active", Trigger.Request()).success


# ---------------------------------------------------------------------------------------------- the stack
def start_stack(ros: Any, folder: Path) -> EntryPoint:
    """sayplan_stack as a process on the test's domain, the planner replaying the demo's transcript; returns once
    the lifecycle manager says the stack is active."""
    params = folder / "params.yaml"
    params.write_text(yaml.safe_dump({"planner": {"ros__parameters": {"replay_transcript": str(TRANSCRIPT)}}}))
    command = [str(WS_ENV), str(BIN / "sayplan_stack"), "--ros-args", "--params-file",
               str(ROOT / "config" / "sayplan.yaml"), "--params-file", str(params)]  # fmt: skip
    entry = start(command, ros.domain_id, folder, "stack")
    client = ros.node("stack_watch").create_client(Trigger, "/lifecycle_manager/is_active")

    def active() -> bool:
        assert entry.proc.poll() is None, f"the stack ended at start-up\n{entry.output()}"
        if not client.service_is_ready():
            return False
        return bool(ros.call(client, Trigger.Request(), HANG_GUARD_S).success)

    try:
        ros.wait_for(active, timeout=START_GUARD_S, what="the stack to be active")
    except BaseException:
        entry.kill()
        raise
    return entry


def stop_stack(entry: EntryPoint) -> None:
    """SIGINT to the group, as Ctrl-C: the sim robot always confirms its stop, so the exit is 0."""
    entry.signal(signal.SIGINT)
    code = entry.wait(HANG_GUARD_S)
    assert code == 0, f"exit {code} after SIGINT\n{entry.output()}"


def check_graph(peer: Peer) -> int:
    """The server's graph equals the replay of the updates it published, from version 2 on, in order."""
    answer = peer.call(GetSceneGraph, "/get_scene_graph", GetSceneGraph.Request())
    assert answer.success, answer.message
    served = msg_to_graph(answer.graph)
    version = int(answer.graph.version)
    peer.ros.wait_for(lambda: version in peer.updates or version == 1, HANG_GUARD_S, f"update {version}")
    versions = sorted(peer.updates)
    assert versions == list(range(2, version + 1)), f"published versions {versions}, graph version {version}"
    assert all(len(peer.updates[v]) == 1 for v in versions), [v for v in versions if len(peer.updates[v]) > 1]
    replay = load_env("office")
    for v in versions:
        replay = apply_update(replay, msg_to_update(peer.updates[v][0]))
    want, got = exact(replay), exact(served)
    for part in ("nodes", "edges"):
        missing = [x for x in want[part] if x not in got[part]][:5]
        extra = [x for x in got[part] if x not in want[part]][:5]
        assert want[part] == got[part], f"{part}: in the replay only {missing}; served only {extra}"
    assert want == got
    return version


def lifecycle_requests(targets: list[Target]) -> list[tuple[int, Any]]:
    """Every command of the lifecycle manager and every transition of each managed node, by id and by label, as
    explicit examples (SHUTDOWN and the shutdown transitions go through `tame`)."""
    found: list[tuple[int, Any]] = []
    for index, target in enumerate(targets):
        if target.name == "/lifecycle_manager/manage_nodes":
            found += [(index, ManageLifecycleNodes.Request(command=c)) for c in (1, 2, 0, 3, 2, 0, 4, 0, 9)]
        elif target.name.endswith("/change_state"):
            ids = (4, 2, 1, 3, 4, 5, 6, 7, 0, 99)
            found += [(index, ChangeState.Request(transition=Transition(id=i))) for i in ids]
            labels = ("deactivate", "cleanup", "configure", "activate", "shutdown", "nonsense")
            found += [(index, ChangeState.Request(transition=Transition(label=label))) for label in labels]
    return found


# ---------------------------------------------------------------------------------------------- the tests
@needs_install
def test_a_hostile_peer_sweep_leaves_the_stack_alive_answering_and_its_graph_a_replay(ros: Any, tmp_path: Path) -> None:
    began = time.monotonic()
    entry = start_stack(ros, tmp_path)
    try:
        peer = Peer(ros, entry)
        peer.discover()
        targets = peer.targets
        assert entry.err.read_text().count("Traceback") == 0, entry.output()

        @settings(max_examples=100, derandomize=True, deadline=None, database=None,
                  phases=[Phase.explicit, Phase.generate],
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
        @given(index=st.integers(0, len(targets) - 1), data=st.data(), request=st.none())
        def sweep(index: int, data: Any, request: Any) -> None:
            target = targets[index]
            if data is None:  # explicit: the seeded generator with one extreme forced
                choices: Choices = Forced(index, SHAPES[index % len(SHAPES)])
            else:
                choices = Drawn(data.draw)
                # between the hostile requests, an update of the office, valid or not, as the stack's own peers send
                update = ApplyGraphUpdate.Request(update=update_to_msg(data.draw(updates())))
                answer = peer.call(ApplyGraphUpdate, "/apply_graph_update", update)
                peer.outcomes[f"office update {'applied' if answer.success else 'refused'}"] += 1
                peer.change_parameters(data.draw(st.sampled_from(NODES)), choices)  # and a parameter change
            peer.last_success = False
            if target.name.endswith("/manage_nodes") or target.name.endswith("/change_state"):
                srv = interface(target.type)
                request = tame(request or peer._built(choices, srv.Request))
                answer = peer.call(srv, target.name, request)
                peer.last_success = bool(answer.success)
                peer.reached[str(target)] += 1
            else:
                peer.send(target, choices, request)
            peer.settle(target, request)

        for index in range(len(targets)):
            sweep = example(index=index, data=None, request=None)(sweep)
        for index, request in lifecycle_requests(targets):
            sweep = example(index=index, data=None, request=request)(sweep)
        swept = time.monotonic()
        sweep()
        swept = time.monotonic() - swept

        # after the sweep: the topics are the server's alone again, and valid requests are answered
        for publisher in peer.publishers.values():
            peer.node.destroy_publisher(publisher)
        path = PlanPath.Request(start="kitchen", goal="cafeteria")
        peer.ros.wait_for(lambda: peer.call(PlanPath, "/plan_path", path).success, HANG_GUARD_S, "a path")
        skills = peer.call(DescribeSkills, "/describe_skills", DescribeSkills.Request())
        assert skills.robot == "sim" and skills.lifecycle_state == "active", skills
        assert peer.call(Trigger, "/lifecycle_manager/is_active", Trigger.Request()).success
        version = check_graph(peer)
        assert entry.proc.poll() is None, entry.output()
        assert "Traceback" not in entry.stderr(), entry.output()
    except BaseException:
        entry.kill()
        raise
    stop_stack(entry)
    assert "Traceback" not in entry.stderr(), entry.output()
    missed = [str(t) for t in targets if not peer.reached[str(t)]]
    assert not missed, f"never reached: {missed}"
    with open("/proc/loadavg") as load:
        loadavg = load.read().split()[:3]
    print(f"\n{len(targets)} targets, {sum(peer.reached.values())} requests in {swept:.0f} s "
          f"({time.monotonic() - began:.0f} s in all, load {' '.join(loadavg)}); graph version {version}")  # fmt: skip
    print("targets:", ", ".join(f"{t} x{peer.reached[str(t)]}" for t in targets))
    print("shapes:", dict(peer.shapes))
    print("outcomes:", dict(sorted(peer.outcomes.items())))


@needs_install
def test_requests_rclpy_itself_cannot_handle_are_refused_and_the_stack_lives(ros: Any, tmp_path: Path) -> None:
    entry = start_stack(ros, tmp_path)
    try:
        client = ros.node("hostile_peer").create_client(SetParameters, "/path_planner/set_parameters")
        assert client.wait_for_service(timeout_sec=HANG_GUARD_S)
        request = SetParameters.Request(parameters=[ParameterMsg(name="method", value=ParameterValue(type=200))])
        future = client.call_async(request)
        ros.wait_for(lambda: future.done() or entry.proc.poll() is not None, HANG_GUARD_S, "an answer or an exit")
        assert entry.proc.poll() is None, f"sayplan_stack exited {entry.proc.returncode}\n{entry.output()}"
        ros.wait_for(future.done, HANG_GUARD_S, "the answer")
        (result,) = future.result().results
        assert not result.successful and "not a valid Parameter.Type" in result.reason, result
        assert ros.call(client, SetParameters.Request(), HANG_GUARD_S) is not None  # still serving
        atomic = ros.node("hostile_peer").create_client(SetParametersAtomically, "/executor/set_parameters_atomically")
        assert atomic.wait_for_service(timeout_sec=HANG_GUARD_S)
        bad = SetParametersAtomically.Request(parameters=[ParameterMsg(name="x", value=ParameterValue(type=77))])
        answer = ros.call(atomic, bad, HANG_GUARD_S)
        assert not answer.result.successful and entry.proc.poll() is None, answer
        # rclpy's ~/get_type_description answered None to a type hash it cannot parse, and sending None raised
        # TypeError in the executor: found by this sweep, it too ended the whole stack
        from type_description_interfaces.srv import GetTypeDescription

        describe = ros.node("hostile_peer").create_client(GetTypeDescription, "/planner/get_type_description")
        garbage = GetTypeDescription.Request(type_name="x/msg/Y", type_hash='"' * 5000)
        described = ros.call(describe, garbage, HANG_GUARD_S)
        assert not described.successful and entry.proc.poll() is None, described
        # the guard keeps an async service (clear_fault) answering as before
        clear = ros.node("hostile_peer").create_client(Trigger, "/sim_skill_server/clear_fault")
        cleared = ros.call(clear, Trigger.Request(), HANG_GUARD_S)
        assert cleared.success and cleared.message == "no fault latched", cleared
    except BaseException:
        entry.kill()
        raise
    stop_stack(entry)
