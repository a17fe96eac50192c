"""The `sayplan` command's parser and entry point.

A subcommand's flags are declared when that subcommand is parsed or its help is shown, and the module that runs it
is imported only when it runs: `sayplan --help` and `sayplan env list` load no graph model, planner or LLM client
(docs/measured/cli_start.md).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from sayplan_core.cli.common import EXIT_USAGE, CliError

#: declares a subcommand's own flags on its parser
Declare = Callable[[argparse.ArgumentParser], None]


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2, like every other error of the command. The flags `declare` adds are
    added on first use: when the parser parses (itself, or through `LazySubcommands` as a subcommand) or shows its
    help."""

    def __init__(self, *args: Any, declare: Declare | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declare = declare

    def declared(self) -> OneLineParser:
        """This parser with every flag it takes (declared now if not yet)."""
        declare, self._declare = self._declare, None
        if declare is not None:
            declare(self)
        return self

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:  # a subparser used on its own declares too
        return super(OneLineParser, self.declared()).parse_known_args(*args, **kwargs)

    def format_help(self) -> str:
        return super(OneLineParser, self.declared()).format_help()

    def format_usage(self) -> str:
        return super(OneLineParser, self.declared()).format_usage()

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


class LazySubcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose parser declares its flags only once it is chosen."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        chosen = self.choices.get(values[0]) if values else None
        if isinstance(chosen, OneLineParser):
            chosen.declared()
        super().__call__(parser, namespace, values, option_string)


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, the flags it takes, and the function that runs it ("module:function" in
    sayplan_core.cli, imported when it runs); a group of subcommands has `children` instead."""

    name: str
    help: str
    declare: Declare | None = None
    run: str = ""
    children: tuple[Command, ...] = ()


def version() -> str:
    """The installed distribution's version (setup.py); from a source tree, package.xml's."""
    from importlib import metadata

    try:
        return metadata.version("sayplan_core")
    except metadata.PackageNotFoundError:
        manifest = Path(__file__).resolve().parents[2] / "package.xml"
        found = re.search(r"<version>\s*([^<\s]+)\s*</version>", manifest.read_text(encoding="utf-8"))
        return found.group(1) if found else "unknown"


class _Version(argparse.Action):
    """`--version`: the version is read (from the package metadata) only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        print(f"sayplan {version()}")
        parser.exit()


def add_global_flags(parser: argparse.ArgumentParser, top: bool) -> None:
    """The flags every command takes, before or after its name (`sayplan --json path ...` = `sayplan path ... --json`).

    Below the top level their default is SUPPRESS: a subcommand that was not given the flag must not
    reset what the top level read (argparse copies a subparser's defaults over the namespace).
    """
    unset: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument("--json", action="store_true", help="machine-readable output", **unset)
    parser.add_argument("--version", action=_Version, default=argparse.SUPPRESS, help="print the version")


def _add_commands(parser: argparse.ArgumentParser, dest: str, commands: Sequence[Command]) -> None:
    sub = parser.add_subparsers(dest=dest, required=True, action=LazySubcommands, parser_class=OneLineParser)
    for command in commands:
        sub.add_parser(command.name, help=command.help, declare=_declaration(command))


def _declaration(command: Command) -> Declare:
    def declare(p: argparse.ArgumentParser) -> None:
        add_global_flags(p, top=False)
        if command.children:
            _add_commands(p, f"{command.name}_cmd", command.children)
            return
        if command.declare is not None:
            command.declare(p)
        p.set_defaults(run=command.run)

    return declare


# ----------------------------------------------------------------------------- each command's flags
def _env_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("env", help="bundled env name or graph file")
    p.add_argument("--text", action="store_true", help="print the graph text")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--collapsed", action="store_true", help="with --text: the collapsed view")
    view.add_argument("--native", action="store_true", help="with --text: native JSON")
    p.add_argument("--with-poses", action="store_true", help="with --collapsed: keep the pose nodes and their links")


def _env_tokens(p: argparse.ArgumentParser) -> None:
    from sayplan_core.graph.tokens import SUPPORTED_ENCODINGS

    p.add_argument("env")
    p.add_argument("--encoding", choices=SUPPORTED_ENCODINGS, default="cl100k_base")


def _env_import(p: argparse.ArgumentParser) -> None:
    from sayplan_core.graph import native_format
    from sayplan_core.graph.importers import FORMATS

    p.add_argument("source")
    p.add_argument("output", help="native graph file; a folder for a GRASIF task list (scenes, goals, tasks.yaml)")
    p.add_argument("--format", choices=FORMATS, default="auto")
    p.add_argument(
        "--connectivity",
        default="",
        help="YAML/JSON list of links ('a b' or [a, b, metres]): real doors between rooms; for a task list, "
        "one such list per task id ({task-id: [links]})",
    )
    p.add_argument(
        "--types",
        default="",
        help="YAML/JSON {object: [class, ...], asset: [...], labels: {3: cup}}: fix a dataset's types (labels: "
        "class names of Hydra's numeric labels)",
    )
    p.add_argument(
        "--agent-at",
        default="",
        help="room or pose node where the robot is (needed to plan on the graph); for a task list, a YAML/JSON "
        "file {task-id: node}",
    )
    p.add_argument(
        "--action-set",
        default="",
        help="for a task list: the action set (bundled name or YAML file; default lookplangraph) whose actions a "
        "goal's states and moves are checked against; a task whose goal needs what no action gives is skipped",
    )
    p.add_argument(
        "--layout",
        choices=(native_format.AUTO, *native_format.LAYOUTS),
        default=native_format.AUTO,
        help="of the native file written: rows (readable), columns (compact, loads in about half the time; "
        f"docs/concepts/graph_loading.md) or auto (the default: columns from {native_format.COLUMNS_FROM_NODES:,} "
        "nodes on, rows below)",
    )


def _env_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("env", help="bundled env name or graph file")
    p.add_argument("output", help="Hydra graph file: .json or .sparkdsg (spark_dsg's binary encoding)")


def _verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", required=True)
    p.add_argument("--plan", required=True, help="plan file (JSON list or text), '-' for stdin, or the plan itself")
    p.add_argument("--action-set", default="sayplan", help="sayplan, lookplangraph or a YAML file")
    p.add_argument("--expand", action="store_true", help="fill in navigation with the path planner first")
    p.add_argument("--strict", action="store_true", help="each goto must move to an adjacent node")


def _path(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", required=True)
    p.add_argument("--from", dest="start", default=None, help="start node (default: the agent's location)")
    p.add_argument("--to", dest="goal", required=True)
    p.add_argument("--method", choices=("dijkstra", "astar"), default="dijkstra")


def _planner_flags(p: argparse.ArgumentParser, default_llm: str = "auto") -> None:
    from sayplan_core.planner_flags import add_planner_arguments

    add_planner_arguments(p, default_llm)


def _plan(p: argparse.ArgumentParser) -> None:
    from sayplan_core.planners import PLANNERS

    p.add_argument("--env", required=True)
    p.add_argument("--instruction", default=None)
    p.add_argument("--formula", default=None, help="an LTLf formula (prefix or list notation): ltl, no LLM")
    p.add_argument("--planner", default=None, choices=sorted(PLANNERS), help="default: sayplan")
    _planner_flags(p)


def _bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", default="", help="task file (default: the bundled 90 SayPlan tasks)")
    p.add_argument("--planners", default="sayplan,sayplan_lite,llm_p,llm_as_planner")
    p.add_argument("--out", default="bench_out", help="output folder (results.jsonl, report.md, results.csv, *.png)")
    p.add_argument("--ids", default="", help="comma-separated task ids")
    p.add_argument("--families", default="", help="simple_search,complex_search,simple_planning,long_horizon")
    p.add_argument("--env", default="", help="only tasks of this env")
    p.add_argument("--limit", type=int, default=None, help="first N selected tasks (N >= 1)")
    p.add_argument("--per-family", type=int, default=None, help="N tasks of each family, drawn with --seed (N >= 1)")
    p.add_argument("--seed", type=int, default=0, help="the seed --per-family draws with (default 0)")
    p.add_argument("--record-dir", default="", help="save each run's transcript here")
    p.add_argument("--replay-dir", default="", help="answer each run from <planner>__<task>.json here")
    p.add_argument("--fresh", action="store_true", help="discard earlier results instead of resuming")
    _planner_flags(p)


def _demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", default="office")
    p.add_argument("--task", default="office-lh-05", help="task id from the bundled task set")
    _planner_flags(p, default_llm="replay")


def _llm_check(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--probe-timeout",
        type=float,
        default=30.0,
        help="give up after this many seconds [0 - 600] (hashing the embedded model's 1.1 GB file takes a few)",
    )
    _planner_flags(p)


#: the command tree, in the order `--help` lists it
COMMANDS = (
    Command("env", "inspect and convert scene graphs", children=(
        Command("list", "bundled environments", run="info_commands:cmd_env_list"),
        Command("show", "summary of an environment (and its text with --text)", _env_show,
                "env_commands:cmd_env_show"),
        Command("tokens", "token table: full vs collapsed graph (SayPlan tables 4/5)", _env_tokens,
                "env_commands:cmd_env_tokens"),
        Command("import",
                "convert SayPlan / GRASIF JSON, Stanford 3DSG .npz or Hydra (spark_dsg) graphs to native JSON",
                _env_import, "env_commands:cmd_env_import"),
        Command("export", "write a graph as a Hydra / Spark-DSG file (.json or binary .sparkdsg)", _env_export,
                "env_commands:cmd_env_export"),
    )),
    Command("verify", "run the scene-graph simulator on a plan", _verify, "plan_commands:cmd_verify"),
    Command("path", "shortest path between two room/pose nodes", _path, "plan_commands:cmd_path"),
    Command("plan", "plan an instruction with an LLM planner (or an LTL formula) and verify it", _plan,
            "plan_commands:cmd_plan"),
    Command("bench", "run a task set with several planners; Markdown + CSV report and plots", _bench,
            "plan_commands:cmd_bench"),
    Command("demo", "the main job end to end on the bundled office", _demo, "plan_commands:cmd_demo"),
    Command("plugins", "the planners and robots installed, with their options", run="info_commands:cmd_plugins"),
    Command("llm", "LLM backend helpers", children=(
        Command("which", "which backend --llm auto picks here, and why", _planner_flags,
                "llm_commands:cmd_llm_which"),
        Command("check", "would the LLM answer? lists models, never asks one (exit 0 yes, 1 no)", _llm_check,
                "llm_commands:cmd_llm_check"),
    )),
)  # fmt: skip


def build_parser(declared: bool = False) -> OneLineParser:
    """The `sayplan` parser. Each subcommand declares its flags when it is chosen; `declared`: all of them now
    (for reading the whole tree: the reference page, tests)."""
    parser = OneLineParser(prog="sayplan", description="LLM task planning over 3D scene graphs")
    add_global_flags(parser, top=True)
    _add_commands(parser, "command", COMMANDS)
    if declared:
        _declare_all(parser)
    return parser


def _declare_all(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _declare_all(child.declared() if isinstance(child, OneLineParser) else child)


def _run(target: str) -> Callable[[argparse.Namespace], int]:
    module, function = target.split(":")
    found: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(f"sayplan_core.cli.{module}"), function
    )
    return found


def user_errors() -> tuple[type[BaseException], ...]:
    """What the user can fix (a bad file, option or answer): "sayplan: error: ...". Anything else is a bug. Read
    when an error is raised: the modules that define them are loaded by then, or the error is not theirs."""
    from sayplan_core.graph.model import GraphError
    from sayplan_core.llm.types import LlmError
    from sayplan_core.sim.action_set import ActionSetError
    from sayplan_core.sim.plan import PlanFormatError

    return (GraphError, PlanFormatError, ActionSetError, CliError, ValueError, LlmError, OSError)


def main(argv: Sequence[str] | None = None) -> int:
    """Every outcome is an exit code: 0 done, 1 plan not verified (`llm check`: not reachable), 2 error (one line
    on stderr), 3 bench runs raised, 4 a task list imported with some tasks skipped (each named on stderr),
    130 interrupted; a closed output pipe (`| head`) ends quietly with 141, as a SIGPIPE would."""
    args = build_parser().parse_args(argv)
    try:
        return int(_run(args.run)(args))
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        print("sayplan: interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        print("sayplan: error: input nested too deeply", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if isinstance(exc, user_errors()):
            print(f"sayplan: error: {_one_line(exc)}", file=sys.stderr)
        else:  # a bug: still one line, and said to be one
            print(
                f"sayplan: internal error: {type(exc).__name__}: {_one_line(exc)} (please report it)", file=sys.stderr
            )
        return EXIT_USAGE


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 2000 else text[:2000] + " ..."


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
