"""The planners and robots installed, found through Python entry points.

A planner is a `sayplan_core.planners.base.Planner` subclass registered in the
`sayplan.planners` group; a robot is a `RobotPlugin` registered in `sayplan.robots`.
The entry-point name is the plugin's id (a goal's `planner`, the launch file's
`robot:=`). Our own plugins register in the same groups from their packages' setup.py,
so a third-party package adds a planner or a robot without an edit here, in the nodes
or in the config files: every table (settings, ROS parameters, CLI flags, bench rows,
reference docs) is derived from what the registry holds.

The robots' registry is ROBOT_REGISTRY, here; the planners' is `sayplan_core.planners.PLANNERS`, beside
the class it accepts. A plugin that fails to load is left out and its problem kept (each registry's
`problems()`, shown by `sayplan plugins`), so one broken package never takes the others down.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from sayplan_core.options import NoOptions, check, table

PLANNER_GROUP = "sayplan.planners"
ROBOT_GROUP = "sayplan.robots"

T = TypeVar("T")


@dataclass(frozen=True)
class RobotPlugin:
    """A robot: the skill server that drives it and the options that server reads.

    node_class names the node ("module:Class") without importing it, so the registry (and the docs) never
    import rclpy or a robot SDK; `Options` must live in a module that imports neither.
    """

    name: str
    summary: str
    node_name: str  # the skill server's ROS name (its key in parameter files)
    package: str  # the ROS package whose executable starts it alone
    executable: str
    node_class: str
    Options: type = NoOptions


class Registry(Mapping[str, T], Generic[T]):
    """One entry-point group, loaded on first use; a read-only mapping of id -> plugin."""

    def __init__(self, group: str, accept: Callable[[str, Any], str]) -> None:
        self.group = group
        self._accept = accept  # "" if the loaded object is a valid plugin of this id, else why not
        self._lock = threading.Lock()
        self._items: dict[str, T] | None = None
        self._dists: dict[str, str] = {}
        self._problems: list[str] = []

    def _load(self) -> dict[str, T]:
        with self._lock:
            if self._items is None:
                items: dict[str, T] = {}
                problems: list[str] = []
                for point in sorted(entry_points(group=self.group), key=_order):
                    problem = self._load_one(point, items)
                    if problem:
                        problems.append(f"{self.group} '{point.name}' ({point.value}): {problem}")
                if not items:
                    problems.append(f"no {self.group} plugin is installed (is sayplan_core installed?)")
                self._items, self._problems = items, problems
            return self._items

    def _load_one(self, point: EntryPoint, items: dict[str, T]) -> str:
        if point.name in items:
            return "a plugin of this id is already registered; this one is ignored"
        try:
            plugin = point.load()
        except Exception as exc:  # any import failure of a third-party package: reported, never fatal
            return f"cannot be loaded: {type(exc).__name__}: {exc}"
        problem = self._accept(point.name, plugin)
        if not problem:
            items[point.name] = plugin
            self._dists[point.name] = _dist(point)
        return problem

    def bundled(self) -> list[str]:
        """The ids our own packages register (the ones the docs describe), in registry order."""
        self._load()
        return [name for name in self if self._dists.get(name, "") in OUR_DISTRIBUTIONS]

    def problems(self) -> list[str]:
        self._load()
        return list(self._problems)

    def reload(self) -> None:
        """Forget what was loaded (tests that install a plugin while running)."""
        with self._lock:
            self._items = None

    def __getitem__(self, name: str) -> T:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"Registry({self.group}: {', '.join(self)})"


def _dist(point: EntryPoint) -> str:
    return (point.dist.name if point.dist is not None else "").replace("-", "_")


#: Our own distributions, by exact name: a third party's may begin with `sayplan_` too.
OUR_DISTRIBUTIONS = ("sayplan_core", "sayplan_spot", "sayplan_franka_omron")


def _order(point: EntryPoint) -> tuple[int, str]:
    """The core's plugins first, then our robot packages', then third parties' (so none can shadow a built-in
    id, wherever it is on the path), each by name."""
    dist = _dist(point)
    return (0 if dist == "sayplan_core" else 1 if dist in OUR_DISTRIBUTIONS else 2, point.name)


def options_problem(options: Any) -> str:
    """Why a plugin's `Options` cannot serve as its options table, or "" when it can."""
    if not (isinstance(options, type) and dataclasses.is_dataclass(options)):
        return "its Options is not a dataclass"
    try:
        defaults = options()
    except Exception as exc:
        return f"its Options cannot be built with its defaults: {exc}"
    for setting in table(options):
        if not isinstance(setting.default, (bool, int, float, str, tuple)):
            return f"its Options field {setting.name} has a default of type {type(setting.default).__name__}"
    try:  # a default its own declaration refuses would fail every table that holds it (the CLI, the node)
        check(defaults)
    except ValueError as exc:
        return f"its Options defaults fail their own declaration: {exc}"
    return ""


def _accept_robot(name: str, plugin: Any) -> str:
    if not isinstance(plugin, RobotPlugin):
        return "not a RobotPlugin"
    if plugin.name != name:
        return f"its name is '{plugin.name}', not the entry point's '{name}'"
    return options_problem(plugin.Options)


ROBOT_REGISTRY: Registry[RobotPlugin] = Registry(ROBOT_GROUP, _accept_robot)
