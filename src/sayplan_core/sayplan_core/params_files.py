"""The parameters a program is given (its `--params-file`s and `-p` rules), checked before any node starts.

rcl merges the params files it is given into one store and hands each node what its sections say; two ways of
that merge lose a value without a word, so each file and rule is read here, as written, and checked against the
parameters the nodes of the stack declare (sayplan_core.settings.node_settings):

- a value of the wrong type in a later file (`skill_delay_s: "fast"` after the shipped file's 0.2): rcl keeps the
  first file's type and drops the later value, so the node ran with 0.2. Refused naming the file, the section,
  the parameter, the type given and the type declared. An integer for a double is refused too (rclpy refuses it).
- a name in a node's own section that the node does not declare: rclpy keeps it and nobody reads it. Refused,
  with the closest name the node has, or the node that declares it (`max_replans` given to the executor is the
  planner's). A `/**` section (a site file shared with Nav2 or a driver) gives every program the same names, so
  there only a name like one of the stack's is refused; the others are the nodes' to warn about.
- a section for no node of the stack: refused when its name is like one of ours (`exector`), else said once.

Every echoed name or value is bounded (`shown`), at most MAX_SHOWN problems are named ("and N more"), and the
work is bounded too: a file of MAX_ENTRIES values at most, a closest name looked for only for what is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.closest import close_names
from sayplan_core.graph.limits import shown
from sayplan_core.options import Setting, Settings
from sayplan_core.settings import ROS_PARAMETERS, TYPO_CUTOFF, node_settings

#: the largest params file read (a site's is a few kB)
MAX_PARAMS_FILE_BYTES = 1 << 20
#: values (and sections) of one file or rule, and how deep its sections nest (namespaces as nested maps)
MAX_ENTRIES = 100_000
MAX_DEPTH = 32
#: problems named in full (each with its closest name); the others are counted
MAX_SHOWN = 20
#: characters of a name or value echoed in a line
SHOWN_CHARS = 80
#: names of `/**` sections no node has that are compared with the stack's (for a typo) at most; the rest are said
MAX_EXAMINED = 200

_WILDCARDS = ("*", "**")
#: a float written with an exponent and no dot (`1e-3`): rcl reads it as a double, YAML 1.1 readers (PyYAML,
#: launch, `ros2 param load`) as a string, so a file that holds one means two things: refused with the way out
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+$")


@dataclass(frozen=True)
class Given:
    """One parameter as a file or rule gives it: where (the file and section, or the rule), which node ('' for
    every node: a `/**` section or a rule without a node), its name and its value."""

    where: str
    node: str
    name: str
    value: Any


@dataclass
class Report:
    """What a check found: the problems (each refuses the start), how many there are, and what is only said."""

    problems: list[str]
    count: int
    notes: list[str]
    #: names of `/**` sections past MAX_EXAMINED, not compared with the stack's
    unexamined: int = 0

    def add(self, problem: str) -> None:
        self.count += 1
        if len(self.problems) < MAX_SHOWN:
            self.problems.append(problem)

    def lines(self) -> list[str]:
        """The problems, one line each, then how many more there are."""
        more = self.count - len(self.problems)
        return [*self.problems, *([f"and {more} more problem(s)"] if more > 0 else [])]

    def line(self) -> str:
        """One line: the first problem, and how many more there are (logged each on its own line)."""
        if not self.problems:
            return ""
        more = f" (and {self.count - 1} more, each on its own line above)" if self.count > 1 else ""
        return f"refused the parameters given: {self.problems[0]}{more}"


def ros_arguments(argv: Sequence[str]) -> list[tuple[str, str]]:
    """The params files and `-p` rules of a command line's `--ros-args` blocks, in order: ('file', path) or
    ('rule', '[node:]name:=value')."""
    out: list[tuple[str, str]] = []
    inside = False
    index = 0
    with_value = {"-r", "--remap", "-e", "--enclave", "--log-level", "--log-config-file", "--log-file-name"}
    while index < len(argv):
        arg = argv[index]
        if arg == "--ros-args":
            inside = True
        elif arg == "--":
            inside = False
        elif inside and index + 1 < len(argv) and arg in ("--params-file", "-p", "--param", *with_value):
            if arg == "--params-file":
                out.append(("file", argv[index + 1]))
            elif arg in ("-p", "--param"):
                out.append(("rule", argv[index + 1]))
            index += 1
        index += 1
    return out


def oversized(argv: Sequence[str]) -> str:
    """Why the first params file of the command line cannot be read within its bound (not a regular file, over
    MAX_PARAMS_FILE_BYTES), '' when every one can: checked before rcl parses the command line, which reads every
    params file whole (a 100 MB one took 300 MB)."""
    for kind, path in ros_arguments(argv):
        if kind == "file":
            try:
                files.read_bytes(path, MAX_PARAMS_FILE_BYTES, "params file")
            except files.FileReadError as exc:
                return str(exc)
    return ""


def load(path: str) -> Any:
    """A params file's YAML, read with a bound (a regular file, MAX_PARAMS_FILE_BYTES, no aliases: files.load_yaml);
    ValueError naming it."""
    text = files.read_text(path, MAX_PARAMS_FILE_BYTES, "params file")
    try:
        return files.load_yaml(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"params file {path} is not YAML: {shown(' '.join(str(exc).split()), 200)}") from None


def file_entries(path: str, data: Any, report: Report) -> list[Given]:
    """Every parameter a params file gives, by section; a layout rcl would not read is a problem in `report`."""
    where = f"params file {path}"
    if data is None:
        return []
    if not isinstance(data, dict):
        report.add(f"{where}: expected node names at the top level, found {_a(_kind(data))}")
        return []
    walk = _Walk(where, [], report)
    walk.sections("", data, 0)
    if walk.budget < 0:
        report.add(f"{where}: over {MAX_ENTRIES} values or sections (not read further)")
    return walk.out


def rule_entry(rule: str) -> Given | None:
    """The parameter a `-p [node:]name:=value` rule gives (its value read as YAML, as rcl does)."""
    where = f"-p {shown(rule, SHOWN_CHARS)}"
    target, sep, text = rule.partition(":=")
    if not sep:
        return None  # rcl refuses it before this runs
    node, _, name = target.rpartition(":")
    try:
        value = files.load_yaml(text)
    except yaml.YAMLError:
        value = text
    return Given(where, _node_of(node) if node else "", name, value)


def given_in(argv: Sequence[str], report: Report) -> list[Given]:
    """Every parameter a command line gives, file by file and rule by rule (a file that cannot be read is a
    problem)."""
    out: list[Given] = []
    for kind, value in ros_arguments(argv):
        if kind == "file":
            try:
                out += file_entries(value, load(value), report)
            except (OSError, ValueError) as exc:
                report.add(" ".join(str(exc).split()))
        else:
            entry = rule_entry(value)
            if entry is not None:
                out.append(entry)
    return out


def check(given: Iterable[Given], nodes: Mapping[str, Settings] | None = None, report: Report | None = None) -> Report:
    """Each parameter against the parameters the stack's nodes declare (`nodes`, by node name), into `report`
    (a new one by default): the problems (an unknown name in a node's section, a typo of ours in a `/**` section,
    a wrong type) and the notes (sections for no node of the stack)."""
    nodes = node_settings() if nodes is None else nodes
    report = Report([], 0, []) if report is None else report
    owners: dict[str, list[str]] = {}
    for node, table_ in nodes.items():
        for setting in table_:
            owners.setdefault(setting.name, []).append(node)
    known = sorted({*owners, *ROS_PARAMETERS})
    others: dict[str, list[str]] = {}  # sections for no node of ours, by node name: where they are
    examined = unexamined = 0
    for item in given:
        if item.node and item.node not in nodes:
            others.setdefault(item.node, []).append(item.where)
        elif item.node:
            _check_own(item, nodes[item.node], owners, report)
        elif item.name in owners:
            for node in owners[item.name]:
                problem = _wrong_type(item, node, nodes[node][item.name])
                if problem:
                    report.add(problem)
                    break
        elif item.name not in ROS_PARAMETERS and (examined >= MAX_EXAMINED or report.count >= MAX_SHOWN):
            unexamined += 1
        elif item.name not in ROS_PARAMETERS:
            # a `/**` name: only one like ours is refused (the others may be another program's; each node warns)
            examined += 1
            close = close_names(item.name, known, 1, TYPO_CUTOFF)
            if close:
                report.add(
                    f"{item.where}: no node of the stack has parameter {shown(item.name, SHOWN_CHARS)} "
                    f"(did you mean {close[0]}?)"
                )
    for node, wheres in sorted(others.items()):
        close = close_names(node, nodes, 1, TYPO_CUTOFF) if report.count < MAX_SHOWN else []
        if close:
            report.add(
                f"{wheres[0]}: no node of the stack is named {shown(node, SHOWN_CHARS)} (did you mean {close[0]}?)"
            )
        else:
            report.notes.append(shown(node, SHOWN_CHARS))
    if unexamined:
        report.unexamined = unexamined
    return report


def notes_lines(report: Report) -> list[str]:
    """What is said without refusing: the sections given for no node of the stack, and how many `/**` names
    were not compared with the stack's (bounded)."""
    lines = []
    if report.notes:
        more = f" and {len(report.notes) - MAX_SHOWN} more" if len(report.notes) > MAX_SHOWN else ""
        named = ", ".join(report.notes[:MAX_SHOWN])
        lines.append(f"params file section(s) for no node of the stack, ignored by it: {named}{more}")
    if report.unexamined:
        lines.append(
            f"{report.unexamined} more parameter(s) of /** sections that no node of the stack has were not checked "
            f"for typos (over {MAX_EXAMINED})"
        )
    return lines


def check_arguments(argv: Sequence[str], nodes: Mapping[str, Settings] | None = None) -> Report:
    """`check` of every parameter a command line's `--ros-args` give."""
    report = Report([], 0, [])
    return check(given_in(argv, report), nodes, report)


# ------------------------------------------------------------------------------------------------ the parts
@dataclass
class _Walk:
    """One file's sections read into `out`, at most MAX_ENTRIES values and sections (`budget`); a layout rcl
    would not read is a problem in `report`. Aliases never get here (files.load_yaml refuses them)."""

    where: str
    out: list[Given]
    report: Report
    budget: int = MAX_ENTRIES

    def spent(self, count: int = 1) -> bool:
        self.budget -= count
        return self.budget < 0

    def sections(self, namespace: str, data: dict[Any, Any], depth: int) -> None:
        """The node sections of a (namespace's) map: `<node>: {ros__parameters: ...}`, or a namespace's map."""
        for key, body in data.items():
            if self.spent():
                return
            section = f"{namespace}/{key}" if namespace else str(key)
            here = f"{self.where}, section {shown(section, SHOWN_CHARS)}"
            if not isinstance(body, dict):
                self.report.add(f"{here}: expected ros__parameters under it, found {_a(_kind(body))}")
            elif "ros__parameters" in body:
                extra = [str(k) for k in body if k != "ros__parameters"]
                if extra:
                    self.report.add(f"{here}: only ros__parameters is read, not {shown(', '.join(extra), SHOWN_CHARS)}")
                parameters = body["ros__parameters"]
                if isinstance(parameters, dict):
                    self.parameters(here, _node_of(section), "", parameters, 0)
                elif parameters is not None:
                    self.report.add(f"{here}: ros__parameters must map names to values, found {_a(_kind(parameters))}")
            elif depth + 1 >= MAX_DEPTH:
                self.report.add(f"{here}: namespaces nested over {MAX_DEPTH} deep")
            else:  # a namespace written as a map of its nodes
                self.sections(section, body, depth + 1)

    def parameters(self, here: str, node: str, prefix: str, values: dict[Any, Any], depth: int) -> None:
        """A section's parameters, nested maps as dotted names (`embodiedrag: {embedder: x}`)."""
        for key, value in values.items():
            if self.spent(1 + (len(value) if isinstance(value, list) else 0)):
                return
            name = f"{prefix}{key}"
            if not isinstance(value, dict):
                self.out.append(Given(here, node, name, value))
            elif depth + 1 >= MAX_DEPTH:
                self.report.add(f"{here}: {shown(name, SHOWN_CHARS)} nested over {MAX_DEPTH} deep")
            else:
                self.parameters(here, node, f"{name}.", value, depth + 1)


def _node_of(section: str) -> str:
    """The node a section key names ('' for every node): `/ns/planner`, `planner` and `/**/planner` name planner;
    `/**`, `/*` and `/ns/*` name every node (of a namespace: checked as every node)."""
    last = section.rstrip("/").rsplit("/", 1)[-1]
    return "" if last in _WILDCARDS or not last else last


def _check_own(item: Given, table_: Settings, owners: Mapping[str, list[str]], report: Report) -> None:
    """A parameter given in `item.node`'s own section: one it declares, of the type it declares."""
    if item.name in table_:
        problem = _wrong_type(item, item.node, table_[item.name])
        if problem:
            report.add(problem)
        return
    if item.name in ROS_PARAMETERS:
        return
    name = shown(item.name, SHOWN_CHARS)
    if report.count >= MAX_SHOWN:  # counted only: no closest name looked for
        report.add(f"{item.where}: {item.node} has no parameter {name}")
        return
    close = close_names(item.name, [s.name for s in table_], 1)
    elsewhere = [node for node in owners.get(item.name, ()) if node != item.node]
    hints = [f"{' and '.join(elsewhere[:3])} declare{'s' if len(elsewhere) == 1 else ''} {name}"] if elsewhere else []
    hints += [f"did you mean {close[0]}?"] if close else []
    hint = f" ({'; '.join(hints)})" if hints else ""
    report.add(f"{item.where}: {item.node} has no parameter {name}{hint}")


#: the ROS parameter type of each settings type
_DECLARED = {bool: "bool", int: "integer", float: "double", str: "string", tuple: "string array"}


def _wrong_type(item: Given, node: str, setting: Setting) -> str:
    """'' when `item`'s value has the type `setting` is declared with (as rclpy would take it); else why not."""
    declared = _DECLARED.get(setting.type, setting.type.__name__)
    given = _kind(item.value)
    if given == declared or (declared == "string array" and given == "empty list"):
        return ""
    hint = ""
    if declared == "double" and given == "integer":
        hint = f": write {item.value}.0"
    elif declared == "string" and given != "null":
        hint = ": put the value in quotes"
    elif declared == "double" and given == "string" and _EXPONENT_FLOAT.match(item.value):
        hint = f": write it with a decimal point and no exponent (rcl reads {item.value} as a number, launch as text)"
    value = shown(repr(item.value), SHOWN_CHARS)
    return (
        f"{item.where}: {node}'s parameter {shown(item.name, SHOWN_CHARS)} is given {_a(given)} ({value}), "
        f"declared {_a(declared)}{hint}"
    )


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _kind(value: Any) -> str:
    """The ROS type of a YAML value, as rcl reads it ('bool', 'integer', 'double', 'string', '<type> array'), or
    what else it is."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, list):
        if not value:
            return "empty list"
        kinds = {_kind(v) for v in value[:1000]}
        if len(kinds) == 1 and next(iter(kinds)) in ("bool", "integer", "double", "string"):
            return f"{next(iter(kinds))} array"
        return "list of mixed values"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__
