"""Every setting of the stack as tables, derived from the typed options (sayplan_core.options).

Nothing is declared here: each node's options are a dataclass (sayplan_core.node_options),
each planner's and each robot's come with the plugin (sayplan_core.plugins). These views
turn them into the tables the ROS parameter declarations, the `sayplan` CLI flags, the
reference docs and the config-file checks are generated from. A setting read at start-up
is read-only at run time; one read per goal may be changed while the node runs (the
change is checked, and a bad value refused) and applies to the next goal.

The planner node hosts every installed planner: the common options (PlannerOptions) are
plain parameters, each planner's own ones are namespaced `<planner>.<field>`, as nav2
namespaces its plugins' parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sayplan_core.closest import close_names
from sayplan_core.node_options import ManagedNodeOptions, PlannerNodeOptions
from sayplan_core.options import PER_GOAL, STARTUP, Setting, Settings, build, settings_of, table
from sayplan_core.planners import PLANNERS
from sayplan_core.planners.base import PlannerOptions
from sayplan_core.plugins import ROBOT_REGISTRY
from sayplan_core.stack_nodes import BAG_RECORDER, CORE_NODES, FOXGLOVE, MANAGER, PERCEPTION, robot_node

__all__ = [
    "PER_GOAL",
    "STARTUP",
    "Setting",
    "Settings",
    "markdown_table",
    "node_settings",
    "not_in_the_stack",
    "planner_config",
    "planner_options",
    "planner_settings",
    "robot_settings",
]


def planner_settings(planners: Iterable[str] | None = None) -> Settings:
    """The planner node's parameters: its own, the planners' common ones, then `<planner>.<field>` for each
    installed planner (or each of `planners`)."""
    rows = table(PlannerNodeOptions) + table(PlannerOptions)
    for name in PLANNERS if planners is None else planners:
        rows += table(PLANNERS[name].Options, f"{name}.")
    return Settings("planner", rows)


def robot_settings(robot: str) -> Settings:
    """The skill server's parameters of an installed robot (KeyError if there is none of that id)."""
    plugin = ROBOT_REGISTRY[robot]
    return settings_of(plugin.Options, plugin.node_name)


def node_settings(bundled_only: bool = False) -> dict[str, Settings]:
    """Every node's settings, by node name (the keys of the config files), from the stack's node table
    (sayplan_core.stack_nodes); plugins as installed, or only our own packages' with `bundled_only` (what the
    reference docs describe)."""
    robots = [robot_node(name) for name in (ROBOT_REGISTRY.bundled() if bundled_only else ROBOT_REGISTRY)]
    nodes: dict[str, Settings] = {}
    for node in (*CORE_NODES, PERCEPTION, *robots, MANAGER, BAG_RECORDER, FOXGLOVE):
        if node.options is None:  # the planner node: its own options, the planners' common ones, each planner's
            nodes[node.name] = planner_settings(PLANNERS.bundled() if bundled_only else None)
        else:
            nodes[node.name] = settings_of(node.options, node.name)
        if node.managed:
            nodes[node.name] = _managed(nodes[node.name])
    return nodes


#: parameters rclpy or rcl give nodes of their own (declared by the node itself, or read by the middleware)
ROS_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service", "start_parameter_event_publisher"})


#: how alike (difflib's ratio on the stems, sayplan_core.closest) an unknown name must be to a parameter of the
#: stack to be taken for its typo and refused; a name like none is let through with a warning
TYPO_CUTOFF = 0.8
#: unknown names compared with the stack's (for a typo) at most, so 20,000 of them cannot stall a node's start:
#: the others are named as unread like any name that is no typo
MAX_EXAMINED = 200


def not_in_the_stack(node: str, names: Iterable[str]) -> tuple[str, list[str]]:
    """The top-level parameters given to `node` that no node of the stack has: ('' or one line naming those that
    look like a typo of a parameter of the stack, each with it; the others). A typo is refused; any other name may
    be meant for another program, since a params file's `/**` section (a site file shared with Nav2 or a driver)
    gives every node the same ones, so it is only warned about. A name another node of the stack has passes (a
    node's own section is checked before the nodes start: sayplan_core.params_files). At most MAX_EXAMINED names
    are compared with the stack's."""
    known = sorted({setting.name for table_ in node_settings().values() for setting in table_} | ROS_PARAMETERS)
    wrong = sorted({name for name in names if name not in known})
    typos: list[str] = []
    others: list[str] = []
    for index, name in enumerate(wrong):
        if index >= MAX_EXAMINED:  # the work is bounded: the rest are only counted as unread
            others.append(name[:100])
            continue
        close = close_names(name, known, 1, TYPO_CUTOFF)
        if close:
            typos.append(f"{name[:100]} (did you mean {close[0]}?)")
        else:
            others.append(name[:100])
    if not typos:
        return "", others
    more = f" and {len(typos) - 20} more" if len(typos) > 20 else ""
    return (
        f"unknown parameter(s) given to {node}, a parameter of no node of the stack: {', '.join(typos[:20])}{more}",
        others,
    )


def _managed(settings: Settings) -> Settings:
    """A managed node's table: its own settings, then what every managed node reads (sayplan_ros.lifecycle)."""
    return Settings(settings.component, [*settings, *table(ManagedNodeOptions)])


def planner_options(values: Mapping[str, Any], action_set: str = "") -> PlannerOptions:
    """The planners' common options from checked planner settings."""
    node = build(PlannerNodeOptions, values)
    return build(PlannerOptions, values, action_set=action_set, budget=node.budget())


def planner_config(name: str, values: Mapping[str, Any]) -> Any:
    """Planner `name`'s own options (its `Options`) from checked planner settings (`<name>.<field>`)."""
    return build(PLANNERS[name].Options, values, f"{name}.")


def markdown_table(nodes: Mapping[str, Settings] | None = None) -> str:
    """The reference docs' parameter table, generated from the settings (a test keeps the docs equal to it)."""
    lines = [
        "| node | parameter | default | range | read | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for node, settings in (nodes or node_settings()).items():
        for index, s in enumerate(settings):
            text = s.default_text()
            default = f"`{text if len(text) <= 40 else text[:37] + '...'}`" if text else "empty"
            read = "start-up" if s.read_only else "per goal"
            label = f"`{node}`" if index == 0 else ""
            lines.append(f"| {label} | `{s.name}` | {default} | {s.range_text()} | {read} | {s.description} |")
    return "\n".join(lines)
