"""The `sayplan` CLI's planner and LLM flags, derived from the planner node's settings.

One flag per option: the node's own (LLM, budget), the planners' common ones, and each
installed planner's own ones. A field several planners declare alike (`embedder`) is one
flag that sets it for each of them; one they declare differently gets a flag per planner
(`--<planner>-<field>`). A planner's field without a declared flag gets `--<field>`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from sayplan_core.node_options import PlannerNodeOptions
from sayplan_core.options import Setting, build, table
from sayplan_core.planners import PLANNERS
from sayplan_core.planners.base import PlannerOptions
from sayplan_core.settings import planner_config, planner_options, planner_settings


@dataclass
class Flag:
    setting: Setting  # the first setting it sets (help, type, default)
    dest: str
    targets: list[str] = field(default_factory=list)  # planner-node setting names it sets


def _same(a: Setting, b: Setting) -> bool:
    return (a.default, a.type, a.minimum, a.maximum, a.choices, a.description) == (
        b.default,
        b.type,
        b.minimum,
        b.maximum,
        b.choices,
        b.description,
    )


def planner_flags(taken: frozenset[str] = frozenset()) -> dict[str, Flag]:
    """flag -> what it sets, in the order the settings are declared. A planner's field whose flag is `taken` (the
    command's own flags, `--env`) or not a long flag gets `--<planner>-<field>`; its dest is namespaced, so no
    field can overwrite what the command reads (`json`, `func`)."""
    flags: dict[str, Flag] = {}
    for s in table(PlannerNodeOptions) + table(PlannerOptions):
        if s.flag:
            flags[s.flag] = Flag(s, s.name, [s.name])
    for name, planner in PLANNERS.items():
        for s in table(planner.Options):
            flag = s.flag or "--" + s.name.replace("_", "-")
            known = flags.get(flag)
            if flag in taken or not flag.startswith("--") or (known is not None and not _same(known.setting, s)):
                flag = f"--{name}-{s.name}".replace("_", "-")
                known = flags.get(flag)
                if flag in taken or (known is not None and not _same(known.setting, s)):
                    continue  # no flag of its own is left: the CLI runs it with its default
            if known is None:
                flags[flag] = Flag(s, _OPTION_DEST + flag[2:].replace("-", "_"), [])
            flags[flag].targets.append(f"{name}.{s.name}")
    return flags


_OPTION_DEST = "planner option "  # a planner field's dest: no attribute the commands read can have this name
_TAKEN = "planner flags taken"  # the command's own flags, as its parser held them before the planner flags


def add_planner_arguments(p: argparse.ArgumentParser, default_llm: str = "auto") -> None:
    """The planner and LLM flags (the planner node's parameters of the same meaning)."""
    g = p.add_argument_group("LLM and planner options (the planner node's parameters of the same meaning)")
    taken = frozenset(p._option_string_actions)
    p.set_defaults(**{_TAKEN: taken})  # planner_values derives the same flags
    flags = planner_flags(taken)
    for flag, f in flags.items():
        s = f.setting
        default = default_llm if f.dest == "llm" else s.default
        extra = f" [{s.range_text()}]" if s.range_text() and not s.choices else ""
        scope = sorted({t.split(".", 1)[0] for t in f.targets if "." in t})
        note = f" ({', '.join(scope)})" if scope else ""
        kwargs: dict[str, Any] = {"dest": f.dest, "default": default, "help": f"{s.description}{extra}{note}"}
        if s.type is bool:
            kwargs["type"] = _bool
        elif s.type is tuple:
            kwargs["type"] = _strings
        elif s.type is not str:
            kwargs["type"] = s.type
        elif s.choices and s.accepts is None:
            kwargs["choices"] = s.choices
        if "choices" not in kwargs and f.dest.startswith(_OPTION_DEST):
            kwargs["metavar"] = flag[2:].replace("-", "_").upper()  # not the namespaced dest
        g.add_argument(flag, **kwargs)


def _strings(text: str) -> tuple[str, ...]:
    """A list-of-strings option as one comma-separated flag value."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def planner_values(args: argparse.Namespace) -> dict[str, Any]:
    """The flags' values as checked planner-node settings; ValueError naming the flag the user typed."""
    flags = planner_flags(getattr(args, _TAKEN, frozenset()))
    values = {target: getattr(args, f.dest) for f in flags.values() for target in f.targets}
    try:
        return planner_settings().check(values)
    except ValueError as exc:
        message = str(exc)
        for flag, f in flags.items():
            for target in f.targets:
                if message.startswith(f"{target} "):
                    raise ValueError(flag + message[len(target) :]) from None
        raise


@dataclass(frozen=True)
class PlannerChoice:
    """What the flags ask of one planner run: the node's LLM and budget, the common and the planner's options."""

    node: PlannerNodeOptions
    options: PlannerOptions
    values: dict[str, Any]

    def config(self, planner: str) -> Any:
        return planner_config(planner, self.values)


def planner_choice(args: argparse.Namespace) -> PlannerChoice:
    values = planner_values(args)
    return PlannerChoice(build(PlannerNodeOptions, values), planner_options(values), values)
