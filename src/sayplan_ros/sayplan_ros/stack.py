"""The stack, assembled in one place: which nodes run, under which names, for which robot.

`create_nodes` is the only place nodes are put together (the demo, `sayplan_stack` and
the tests use it); `launch/sayplan.launch.py` starts the same list as processes, and a
test checks that the two agree.

    sayplan_stack --ros-args --params-file config/sayplan.yaml --params-file config/robots/sim.yaml

Parameters reach each node by its name exactly as with a launch file. Every params file and `-p` rule is checked
first against what the nodes declare (sayplan_core.params_files): a name a node does not have in its own section,
or a value of the wrong type (which rcl would drop when an earlier file gave another type), refuses the start.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import rclpy.logging
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.utilities import remove_ros_args

from sayplan_core.params_files import check_arguments, notes_lines, oversized
from sayplan_core.plugins import ROBOT_REGISTRY
from sayplan_core.stack_nodes import CORE_NODES, FOXGLOVE, MANAGER, StackNode, robot_node
from sayplan_ros.runner import run_nodes


def load_class(spec: StackNode) -> Callable[..., Node]:
    """The node's class; ValueError naming it and the node (a plugin's may be misspelled or not installed)."""
    module, _, name = spec.cls.partition(":")
    try:
        node_class: Callable[..., Node] = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        raise ValueError(f"{spec.name}: its node class {spec.cls} cannot be imported: {exc}") from None
    return node_class


class _Robots(Mapping[str, StackNode]):
    """Each installed robot's skill server (serving `execute_skill` and `describe_skills`), by robot id: a view
    of the robot plugins (sayplan_core.plugins), so a robot package adds itself without an edit here."""

    def __getitem__(self, name: str) -> StackNode:
        return robot_node(name)

    def __iter__(self) -> Iterator[str]:
        return iter(ROBOT_REGISTRY)

    def __len__(self) -> int:
        return len(ROBOT_REGISTRY)


ROBOTS: Mapping[str, StackNode] = _Robots()


def stack_specs(robot: str = "sim", foxglove: bool = False) -> list[StackNode]:
    if robot not in ROBOTS:
        raise ValueError(f"unknown robot '{robot}' (available: {', '.join(ROBOTS)})")
    spec = ROBOTS[robot]
    if spec.name in {core.name for core in (*CORE_NODES, MANAGER, FOXGLOVE)}:
        raise ValueError(f"robot '{robot}': its node name '{spec.name}' is a core node's")
    return [*CORE_NODES, spec, *([FOXGLOVE] if foxglove else []), MANAGER]


def managed_names(robot: str = "sim") -> list[str]:
    """The managed nodes of `robot`'s stack, in start-up order."""
    return [spec.name for spec in stack_specs(robot) if spec.managed]


def composed_parameters(robot: str = "sim") -> dict[str, dict[str, Any]]:
    """What the composition itself sets, by node name (the launch file applies it as this module does): the
    manager manages this robot's managed nodes."""
    return {MANAGER.name: {"node_names": managed_names(robot)}}


def create_nodes(
    context: Context | None = None,
    robot: str = "sim",
    overrides: Mapping[str, Sequence[Parameter]] | None = None,
    namespace: str = "",
    foxglove: bool = False,
) -> list[Node]:
    """The whole stack for one robot (with the Foxglove bridge if asked); `overrides` maps node names to parameter
    overrides."""
    overrides = overrides or {}
    unknown = set(overrides) - {spec.name for spec in stack_specs(robot, foxglove)}
    if unknown:
        raise ValueError(f"parameter overrides for node(s) not in the stack: {', '.join(sorted(unknown))}")
    nodes: list[Node] = []
    try:
        for spec in stack_specs(robot, foxglove):
            node_class = load_class(spec)
            params = [Parameter(k, value=v) for k, v in composed_parameters(robot).get(spec.name, {}).items()]
            params += list(overrides.get(spec.name, ()))
            # the spec's name, as launch's `name=`: a robot plugin's node_name, whatever its class's default
            node = node_class(node_name=spec.name, context=context, namespace=namespace, parameter_overrides=params)
            nodes.append(node)
    except BaseException:
        for node in nodes:
            node.destroy_node()
        raise
    return nodes


def main(args: list[str] | None = None) -> None:
    """`sayplan_stack [--robot sim] --ros-args ...`"""
    argv = list(sys.argv if args is None else ["sayplan_stack", *args])
    parser = argparse.ArgumentParser(prog="sayplan_stack", description="run the whole stack in one process")
    parser.add_argument("--robot", default="sim", choices=sorted(ROBOTS), help="which robot's skill server to start")
    parser.add_argument(
        "--foxglove",
        action="store_true",
        help="also start foxglove_bridge (port and host from its section of a params file)",
    )
    refused = oversized(argv)  # before rcl, which reads every params file whole to parse the command line
    if refused:
        print(f"sayplan_stack: refused the parameters given: {refused}", file=sys.stderr)
        sys.exit(2)
    try:
        plain = remove_ros_args(argv)
    except (
        RuntimeError
    ) as exc:  # RCLError: rcl's own refusal of a --ros-args block (a node name it does not accept, say)
        print(f"sayplan_stack: refused the ROS arguments given: {' '.join(str(exc).split())[:500]}", file=sys.stderr)
        sys.exit(2)
    options = parser.parse_args(plain[1:])

    def make_nodes() -> list[Node]:
        check_given(argv)
        return create_nodes(robot=options.robot, foxglove=options.foxglove)

    run_nodes("sayplan_stack", make_nodes, argv[1:])


def check_given(argv: Sequence[str]) -> None:
    """Every params file and `-p` rule of the command line against what the stack's nodes declare, before any
    node starts (sayplan_core.params_files): each problem is logged on its own line (bounded) and the start is
    refused with the first (ValueError); sections for no node of the stack are said once."""
    logger = rclpy.logging.get_logger("sayplan_stack")
    report = check_arguments(argv)
    for line in notes_lines(report):
        logger.warning(line)
    if report.count:
        for line in report.lines():
            logger.error(line)
        raise ValueError(report.line())
