"""ROS parameters generated from a sayplan_core settings table or options dataclass.

Each setting becomes a declared parameter with its description, its range in the
descriptor, and `read_only` when it is read at start-up (files always). A change at
run time goes through an on-set callback that checks it against the same table and
refuses a bad value with the reason, so `ros2 param set` never reports success for a
value the node ignores. Per-goal settings are read with `get_parameter` when a goal
starts.
"""

from __future__ import annotations

from typing import Any, TypeVar

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

from sayplan_core.options import Setting, Settings, build, settings_of
from sayplan_core.settings import not_in_the_stack

T = TypeVar("T")


def descriptor(setting: Setting) -> ParameterDescriptor:
    text = setting.description
    if setting.range_text():
        text = f"{text} [{setting.range_text()}]"
    if setting.read_only:
        text = f"{text} (read at start-up)"
    desc = ParameterDescriptor(description=text, read_only=setting.read_only)
    if setting.type is tuple:
        desc.type = ParameterType.PARAMETER_STRING_ARRAY
    if setting.type is int and (setting.minimum is not None or setting.maximum is not None):
        desc.integer_range = [
            IntegerRange(
                from_value=int(setting.minimum if setting.minimum is not None else -(2**62)),
                to_value=int(setting.maximum if setting.maximum is not None else 2**62),
                step=1,
            )
        ]
    if setting.type is float and setting.minimum is not None and setting.maximum is not None:
        desc.floating_point_range = [
            FloatingPointRange(from_value=float(setting.minimum), to_value=float(setting.maximum), step=0.0)
        ]
    return desc


#: rclpy's own parameters that our nodes read at start-up only. Switching use_sim_time makes rclpy create or
#: destroy the node's /clock subscription under the spinning executor; toggled true, false, true it killed the
#: whole stack process ("cannot use Destroyable because destruction was requested").
START_UP_ONLY = frozenset({"use_sim_time"})


def start_up_only(node: Node, parameter: Parameter) -> str:
    """'' when `parameter` (one of START_UP_ONLY) keeps its value; else why the change is refused. Our callback
    runs before rclpy's own (rclpy calls the newest first), so a refused change never reaches the clock."""
    if not node.has_parameter(parameter.name) or parameter.value == node.get_parameter(parameter.name).value:
        return ""
    return f"{parameter.name} is read at start-up only: restart the node with the new value"


def declare_settings(node: Node, settings: Settings, check: bool = True) -> dict[str, Any]:
    """Declare every setting of the table on `node`; returns the start-up values, checked (ValueError if bad).
    With `check` False they are returned as given: a managed node checks them at configure."""
    for setting in settings:
        default: Any = setting.default
        if isinstance(default, tuple):  # an empty list has no type of its own: declared as a string array
            default = list(default) if default else Parameter.Type.STRING_ARRAY
        node.declare_parameter(setting.name, default, descriptor(setting))
    values = current(node, settings)
    if check:
        misspelled = unknown_top_level(node)
        if misspelled:
            raise ValueError(misspelled)
    checked = settings.check(values) if check else values

    def on_set(parameters: list[Parameter]) -> SetParametersResult:
        for parameter in parameters:
            if parameter.name in START_UP_ONLY:
                refused = start_up_only(node, parameter)
                if refused:
                    node.get_logger().warning(f"refused parameter change: {refused}")
                    return SetParametersResult(successful=False, reason=refused)
            if parameter.name not in settings:
                continue
            try:
                settings[parameter.name].check(parameter.value)
            except ValueError as exc:
                node.get_logger().warning(f"refused parameter change: {exc}")
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return checked


def unknown_top_level(node: Node) -> str:
    """'' or one line naming the top-level parameters a params file or launch gives `node` that no node of the
    stack has and that look like a typo of one (`temprature`, `skill_dealy_s`): rclpy keeps them and nobody reads
    them. Other unknown names (a site file's `/**` section for Nav2) are logged once as ignored."""
    overrides: Any = getattr(node, "_parameter_overrides", {})  # rclpy's own store (Humble to Kilted)
    given = [str(name) for name in overrides if "." not in str(name) and not node.has_parameter(str(name))]
    if not given:
        return ""
    refused, unread = not_in_the_stack(node.get_name(), given)
    if unread:
        more = f" and {len(unread) - 20} more" if len(unread) > 20 else ""
        node.get_logger().warning(f"parameter(s) no node of the stack reads, ignored: {', '.join(unread[:20])}{more}")
    return refused


def unknown_nested(node: Node, settings: Settings) -> str:
    """'' or one line naming the parameters a params file or launch gives `node` inside a namespace of its settings
    (`sayplan.`) that no setting has: rclpy keeps an override nobody declares and never reads it, so a misspelled
    nested option (`sayplan.floor_veiw_rooms`) would be ignored without a word. Top-level names are not checked: a
    params file's `/**` section gives every node the same ones."""
    overrides: Any = getattr(node, "_parameter_overrides", {})  # rclpy's own store (Humble to Kilted)
    spaces = {s.name.rsplit(".", 1)[0] + "." for s in settings if "." in s.name}
    wrong = [
        str(name)
        for name in overrides
        if any(str(name).startswith(space) for space in spaces) and not node.has_parameter(str(name))
    ]
    return settings.unknown(wrong)


def current(node: Node, settings: Settings) -> dict[str, Any]:
    """Every setting's value now (per-goal ones may have changed since start-up); an empty list that nothing set
    is its default."""
    values = {}
    for s in settings:
        if isinstance(s.default, tuple):
            unset = Parameter(s.name, Parameter.Type.STRING_ARRAY, list(s.default))
            values[s.name] = tuple(node.get_parameter_or(s.name, unset).value)
        else:
            values[s.name] = node.get_parameter(s.name).value
    return values


def declare_options(node: Node, options: type[T]) -> T:
    """Declare an options dataclass's parameters on `node`; returns the start-up values, typed and checked."""
    return build(options, declare_settings(node, settings_of(options, node.get_name())))


def current_options(node: Node, options: type[T]) -> T:
    """The options now, typed (per-goal ones may have changed since start-up; every change was checked)."""
    return build(options, current(node, settings_of(options, node.get_name())))
