"""Typed options: a dataclass whose fields carry their own documentation, range and reading rule.

A component (a node, a planner, a robot) declares one frozen dataclass of `option(...)`
fields. Everything else is derived from it by the functions here, so nothing is
written twice: the settings table (`sayplan_core.settings.Setting` rows, from which the
ROS parameter declarations, the CLI flags and the reference docs are generated), the
typed instance a node works with (`build`), and the plain values a bench row records
(`values_of`). Names are prefixed with a namespace (`embodiedrag.`) where one node hosts
the options of several plugins, as nav2 does for its planner plugins.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sayplan_core.closest import close_names

_KEY = "sayplan_option"
STARTUP = "start-up"
PER_GOAL = "per goal"

T = TypeVar("T")


@dataclass(frozen=True)
class OptionSpec:
    """What a field declares besides its default (see `option`)."""

    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    per_goal: bool = False
    names_file: bool = False
    flag: str = ""
    accepts: Callable[[Any], bool] | None = None  # values allowed besides `choices` (e.g. "openai:<model>")
    accepts_text: str = ""  # how those values look, for messages and docs


def option(
    default: bool | int | float | str | tuple[str, ...],
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] = (),
    per_goal: bool = False,
    names_file: bool = False,
    flag: str = "",
    accepts: Callable[[Any], bool] | None = None,
    accepts_text: str = "",
) -> Any:
    """One option field: its default, what it means, its range, and whether it may change per goal.

    names_file: the value is a path on the host, so it is read at start-up only and never taken from a message.
    flag: the `sayplan` CLI flag that sets it, when the CLI offers it.
    """
    spec = OptionSpec(doc, minimum, maximum, choices, per_goal, names_file, flag, accepts, accepts_text)
    return dataclasses.field(default=default, metadata={_KEY: spec})


def option_fields(cls: type) -> Iterator[tuple[dataclasses.Field[Any], OptionSpec]]:
    """The option fields of an options dataclass, in declaration order (plain fields are skipped)."""
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        if isinstance(spec, OptionSpec):
            yield f, spec


def build(cls: Callable[..., T], values: Mapping[str, Any], prefix: str = "", **extra: Any) -> T:
    """An instance of an options dataclass from checked values named `<prefix><field>` (missing: default)."""
    assert isinstance(cls, type)
    kwargs = {f.name: values[prefix + f.name] for f, _ in option_fields(cls) if prefix + f.name in values}
    built: T = cls(**kwargs, **extra)
    return built


def values_of(options: Any, prefix: str = "") -> dict[str, Any]:
    """Every option field of an instance as plain data, named `<prefix><field>` (a bench row, a log line)."""
    return {prefix + f.name: getattr(options, f.name) for f, _ in option_fields(type(options))}


def defaults_of(cls: type, prefix: str = "") -> dict[str, Any]:
    """The declared default of every option field of an options dataclass, named `<prefix><field>`."""
    return {prefix + f.name: f.default for f, _ in option_fields(cls) if f.default is not dataclasses.MISSING}


@dataclass(frozen=True)
class NoOptions:
    """The options of a plugin that has none of its own."""


# ----------------------------------------------------------------------------- the table derived from the fields
@dataclass(frozen=True)
class Setting:
    """One row of a settings table: a ROS parameter, a CLI flag, a line of the reference docs."""

    name: str
    default: bool | int | float | str | tuple[str, ...]  # a tuple: a list of strings (a STRING_ARRAY parameter)
    description: str
    when: str = STARTUP
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    names_file: bool = False  # a path on the host: always read-only, never taken from a message
    flag: str = ""  # the CLI flag, when the CLI offers it
    accepts: Callable[[Any], bool] | None = None  # values allowed besides `choices`
    accepts_text: str = ""

    def __post_init__(self) -> None:
        assert self.when in (STARTUP, PER_GOAL), self.name
        assert not (self.names_file and self.when != STARTUP), f"{self.name}: a file setting is read at start-up"

    @property
    def type(self) -> type:
        return type(self.default)

    @property
    def read_only(self) -> bool:
        return self.when == STARTUP

    def coerce(self, value: Any) -> Any:
        """The value as this setting's type (an int is a valid float); ValueError naming the setting if not."""
        kind = self.type
        if kind is tuple:
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{self.name} must be a list of strings, got {str(value)[:200]}")
            return tuple(value)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{self.name} must be a {kind.__name__}, got {repr(value)[:200]}")
        return value

    def check(self, value: Any) -> Any:
        """Coerce and range-check one value; raises ValueError naming the setting and the allowed range."""
        value = self.coerce(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{self.name} must be a finite number, got {value}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{self.name} must be >= {self.minimum:g}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{self.name} must be <= {self.maximum:g}, got {value}")
        listed = bool(self.choices) or self.accepts is not None
        if listed and value not in self.choices and not (self.accepts is not None and self.accepts(value)):
            allowed = ", ".join(
                [*(c or '""' for c in self.choices), *([self.accepts_text] if self.accepts_text else [])]
            )
            raise ValueError(f"{self.name} must be one of {allowed}, got '{str(value)[:200]}'")
        return value

    def range_text(self) -> str:
        if self.choices or self.accepts_text:
            return ", ".join([*(c or '""' for c in self.choices), *([self.accepts_text] if self.accepts_text else [])])
        if self.minimum is not None or self.maximum is not None:
            return f"{_number_text(self.minimum)}..{_number_text(self.maximum)}"
        return ""

    def default_text(self) -> str:
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, tuple):
            return ", ".join(self.default)
        return str(self.default)


def _number_text(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class Settings:
    """The settings of one component, in declaration order."""

    def __init__(self, component: str, settings: Iterable[Setting]) -> None:
        self.component = component
        self._by_name: dict[str, Setting] = {}
        for s in settings:
            assert s.name not in self._by_name, f"{component}: setting {s.name} declared twice"
            self._by_name[s.name] = s

    def __iter__(self) -> Iterator[Setting]:
        return iter(self._by_name.values())

    def __getitem__(self, name: str) -> Setting:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def defaults(self) -> dict[str, Any]:
        return {s.name: s.default for s in self}

    def unknown(self, names: Iterable[str]) -> str:
        """'' when every name is a setting; else one line naming the others, each with the setting it most likely
        means (a misspelled `sayplan.floor_veiw_rooms` is refused, never silently ignored)."""
        unknown = sorted(set(names) - set(self._by_name))
        if not unknown:
            return ""
        named = []
        for name in unknown[:20]:
            close = close_names(name, self._by_name, 1)
            named.append(f"{name[:100]} (did you mean {close[0]}?)" if close else name[:100])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        return f"unknown {self.component} setting(s): {', '.join(named)}{more}"

    def check(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Every value checked (unknown names refused); missing ones take their default."""
        unknown = self.unknown(values)
        if unknown:
            raise ValueError(unknown)
        out = self.defaults()
        for name, value in values.items():
            out[name] = self[name].check(value)
        return out


def table(cls: type, prefix: str = "") -> list[Setting]:
    """The settings rows of an options dataclass, named `<prefix><field>`."""
    rows = []
    for f, spec in option_fields(cls):
        rows.append(
            Setting(
                prefix + f.name,
                f.default,  # type: ignore[arg-type]
                spec.doc,
                PER_GOAL if spec.per_goal else STARTUP,
                spec.minimum,
                spec.maximum,
                spec.choices,
                spec.names_file,
                spec.flag,
                spec.accepts,
                spec.accepts_text,
            )
        )
    return rows


def settings_of(cls: type, component: str, prefix: str = "") -> Settings:
    return Settings(component, table(cls, prefix))


def check(options: T) -> T:
    """Every option field range-checked by its own declaration; ValueError naming the first bad one."""
    for setting in table(type(options)):
        setting.check(getattr(options, setting.name))
    return options
