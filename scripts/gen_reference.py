#!/usr/bin/env python3
"""Write the reference pages under docs/reference/ from the code, so they cannot drift from it.

    scripts/ws_env.sh python scripts/gen_reference.py           # rewrite the pages
    scripts/ws_env.sh python scripts/gen_reference.py --check   # exit 1 naming every stale page

The parameters and the planners and robots (ours, from the plugin registry) are rendered by `sayplan_core.reference`;
outcome codes come from `sayplan_core.outcomes`, the CLI from the argparse parser of `sayplan_core.cli`, action sets
from the bundled YAML files. test/core/test_reference.py fails while any page differs from what this script
writes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from enum import Enum, IntEnum
from pathlib import Path

from sayplan_core import outcomes
from sayplan_core.cli import build_parser
from sayplan_core.reference import GENERATED, PAGES
from sayplan_core.sim.action_set import ActionSpec, Clause, builtin_action_sets, load_action_set
from sayplan_core.sim.roles import ROLES

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
HELP_COLUMNS = "100"  # argparse wraps help to the terminal: fixed, so the page is the same on every machine


def _skill_group(code: outcomes.SkillCode) -> str:
    if code is outcomes.SkillCode.NONE:
        return "succeeded"
    if code.replannable:
        return "the world is not as planned: the executor replans"
    if code.refused:
        return "refused before the robot moved"
    if code.stopped:
        return "stopped from outside (cancel, timeout, a lifecycle pause)"
    return "robot fault: the task ends" + (" and the skill server latches it" if code.latches else "")


def _codes(enum: type[IntEnum], meaning: dict[str, str] | None = None) -> Iterator[str]:
    yield "| code | name | label |" + (" meaning |" if meaning is not None else "")
    yield "| --- | --- | --- |" + (" --- |" if meaning is not None else "")
    for member in enum:
        row = f"| {member.value} | `{member.name}` | `{member.name.lower()}` |"
        yield row + (f" {meaning[member.name]} |" if meaning is not None else "")


def _values(enum: type[Enum]) -> str:
    return ", ".join(f"`{member.value}`" for member in enum)


def outcomes_page() -> str:
    skill_meaning = {code.name: _skill_group(code) for code in outcomes.SkillCode}
    return "\n".join(
        [
            "# Outcome codes",
            "",
            GENERATED,
            "",
            "The typed results of `sayplan_core.outcomes`, which mirror the constants of `sayplan_interfaces` value",
            "for value (`test/ros/test_contracts.py` keeps both sides equal). What each promises:",
            "[concepts/contracts.md](../concepts/contracts.md).",
            "",
            f"## Skills: `SkillCode` (`SkillOutcome`)\n\n{outcomes.SkillCode.__doc__}\n",
            *_codes(outcomes.SkillCode, skill_meaning),
            "",
            f"## Plans: `PlanCode` (`PlanOutcome`)\n\n{outcomes.PlanCode.__doc__}\n",
            *_codes(outcomes.PlanCode),
            "",
            f"## Tasks: `TaskCode` (`ExecuteTask.Result`)\n\n{outcomes.TaskCode.__doc__}\n",
            *_codes(outcomes.TaskCode),
            "",
            "## Stages and statuses",
            "",
            f"- `Stage` ({outcomes.Stage.__doc__}): {_values(outcomes.Stage)}",
            f"- `Status` ({outcomes.Status.__doc__}): {_values(outcomes.Status)}",
            f"- `PlanStage` ({outcomes.PlanStage.__doc__}): {_values(outcomes.PlanStage)}",
            "",
        ]
    )


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parser and every subcommand's, depth first, in the order they were added."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def cli_page() -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        helps = [(p.prog, p.format_help().rstrip()) for p in _parsers(build_parser(declared=True))]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    lines = [
        "# The `sayplan` command",
        "",
        GENERATED,
        "",
        "The `--help` of every subcommand of `sayplan` (`sayplan_core.cli`). Examples and exit codes:",
        "[howto/cli.md](../howto/cli.md).",
        "",
    ]
    for prog, text in helps:
        lines += [f"## `{prog}`", "", "```text", text, "```", ""]
    return "\n".join(lines)


def _clauses(clauses: tuple[Clause, ...]) -> str:
    return ", ".join(c.name if c.arg is None else f"{c.name}: {c.arg}" for c in clauses) or "-"


def _action_row(spec: ActionSpec) -> str:
    targets = " / ".join(spec.targets) + (" (optional)" if spec.optional_target else "") or "-"
    affordances = ", ".join(spec.affordances) or "-"
    cells = [f"`{spec.name}`", spec.role or "-", targets, affordances]
    cells += [_clauses(spec.preconditions), _clauses(spec.effects), spec.description.replace("|", "\\|")]
    return "| " + " | ".join(cells) + " |"


def action_sets_page() -> str:
    lines = [
        "# Action sets",
        "",
        GENERATED,
        "",
        "The bundled action sets (`sayplan_core/sim/action_sets/*.yaml`, schema in `sayplan_core/sim/action_set.py`):",
        "what each skill takes, needs and changes in the scene-graph simulator. Preconditions are checked in order;",
        "the first that fails is the feedback. How the simulator uses them:",
        "[concepts/scene_graphs.md](../concepts/scene_graphs.md#simulator); where its rules differ from the papers'",
        "simulators: [concepts/simulator_differences.md](../concepts/simulator_differences.md).",
        "",
        "## Roles",
        "",
        "What an action does, whatever its verb (`sayplan_core/sim/roles.py`). Simulator feedback names the set's verb",
        "for a role, and a robot runs an action by its role. The loader refuses a role whose effect the action lacks.",
        "",
        "| role | the effect it needs | meaning |",
        "| --- | --- | --- |",
        *(f"| {name} | `{role.effect_text()}` | {role.meaning} |" for name, role in ROLES.items()),
        "",
        "A new verb whose meaning is one of these is one entry in a set that extends a bundled one; a robot set drops",
        "what the robot cannot do with `without`, and an entry under a base's name changes only the keys it gives:",
        "",
        "```yaml",
        "name: my_robot",
        "extends: sayplan",
        "without: [turn_on, turn_off]",
        "actions:",
        "  grab:",
        "    role: pick",
        "    targets: [object]",
        "    affordance: [pickup]",
        "    description: Take an object from the accessed asset into the hand.",
        "    preconditions: [not_held, hand_empty, in_agent_room, under_accessed, container_open]",
        "    effects: [grasp]",
        "  goto:",
        "    description: Drive to a room or pose node.",
        "```",
        "",
        "Robots read it through their `action_set` parameter; one whose set holds an action whose role it has no",
        "program for stops at configure, naming the action. The loader refuses an action with no effect, a role",
        "with any effect but its own, a blank key in an entry that changes a base action, and a name both dropped",
        "and given; a file without a `name` is named by its stem, and one named like a bundled set is refused.",
        "Not yet: the planners plan only in bundled sets, so a set of your own runs the steps sent to a",
        "robot's `execute_skill` (a script, a test), and a task planned by the stack for it ends",
        "`unsupported_action_set`.",
        "",
    ]
    for name in builtin_action_sets():
        action_set = load_action_set(name)
        repeat = f"a step that changes nothing: {action_set.on_repeat}"
        if action_set.auto_insert:
            verbs = action_set.verbs()
            inserted = " or ".join(f"`{verbs[role]}`" for role in action_set.auto_insert)
            repeat += f"; a missing {inserted} step is inserted, not refused (verify_plan reports it)"
        lines += [f"## `{name}`", "", f"{action_set.description} ({repeat})."]
        lines += ["", "| action | role | targets | affordance | preconditions | effects | description |"]
        lines += ["| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [_action_row(spec) for spec in action_set.actions.values()]
        lines.append("")
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """File name under docs/reference/ -> its text."""
    return {
        **{name: render() for name, render in PAGES.items()},
        "outcomes.md": outcomes_page(),
        "cli.md": cli_page(),
        "action_sets.md": action_sets_page(),
    }


def stale(folder: Path = REFERENCE) -> list[str]:
    """The pages whose file is missing or differs from what the code gives."""
    return [
        name
        for name, text in pages().items()
        if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            print(f"docs/reference/{name} is stale: run scripts/gen_reference.py", file=sys.stderr)
        return 1 if names else 0
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (REFERENCE / name).write_text(text, encoding="utf-8")
        print(f"wrote docs/reference/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
