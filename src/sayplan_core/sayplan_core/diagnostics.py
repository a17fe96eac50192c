"""What each node reports on `/diagnostics`, as plain data: levels, statuses, and the builders from core state.

The ROS side (sayplan_ros.diagnostics) only turns these into diagnostic_msgs/DiagnosticArray. Levels carry the
byte values of diagnostic_msgs/DiagnosticStatus, so a status means the same here, on the wire and in
rqt_robot_monitor. Every builder is pure (no I/O, no clock of its own): what it reports is what its caller already
knows, and a slow check (the LLM probe) is made elsewhere and handed in with its age.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from sayplan_core.robots.fault_latch import FaultLatch

#: Longest message or value kept, characters (a robot's or a server's text is untrusted).
MAX_TEXT_CHARS = 500


class Level(IntEnum):
    """diagnostic_msgs/DiagnosticStatus levels (OK=0, WARN=1, ERROR=2, STALE=3)."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


def _clip(text: str) -> str:
    return " ".join(str(text).split())[:MAX_TEXT_CHARS]


@dataclass(frozen=True)
class Status:
    """One diagnostic status: `name` is the check (the publisher prefixes the node's name), `values` key-value
    details for tools and people."""

    name: str
    level: Level
    message: str
    values: Mapping[str, str] = field(default_factory=dict)
    hardware_id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _clip(self.message))
        object.__setattr__(self, "values", {str(k): _clip(v) for k, v in self.values.items()})


def worst(statuses: Iterable[Status]) -> Level:
    """The most severe level among `statuses` (OK for none); STALE counts as worse than ERROR, as the aggregator
    ranks it."""
    return max((s.level for s in statuses), default=Level.OK)


# ---------------------------------------------------------------------------------------------- every node
def lifecycle_status(state: str, error: str, hardware_id: str = "") -> Status:
    """A managed node's lifecycle state: OK active; WARN otherwise (it serves nothing until its lifecycle manager
    activates it); ERROR when its last transition failed, with the node's line saying why."""
    values = {"state": state}
    if error:
        return Status("lifecycle", Level.ERROR, f"{state}: {error}", values, hardware_id)
    if state == "active":
        return Status("lifecycle", Level.OK, "active", values, hardware_id)
    return Status("lifecycle", Level.WARN, f"{state}: serves nothing until activated", values, hardware_id)


# ---------------------------------------------------------------------------------------------- skill servers
def fault_latch_status(latch: FaultLatch, hardware_id: str = "") -> Status:
    """ERROR while a fault is latched (nothing moves until an operator clears it), naming it and how to clear it."""
    fault = latch.fault
    if fault is None:
        return Status("fault latch", Level.OK, "no fault latched", {"latched": "false"}, hardware_id)
    later = latch.later
    values = {
        "latched": "true",
        "code": fault.code.label,
        "cause": fault.cause,
        "step": fault.step,
        "later faults": str(len(later)),
        "clear with": latch.clear_hint,
    }
    return Status("fault latch", Level.ERROR, f"fault latched: {fault.describe()}", values, hardware_id)


def link_status(
    name: str,
    up: bool,
    detail: str,
    values: Mapping[str, str] | None = None,
    hardware_id: str = "",
    down_level: Level = Level.ERROR,
) -> Status:
    """A robot link (a TCP session, an SDK session, an action server): OK while up, else `down_level` saying why."""
    return Status(name, Level.OK if up else down_level, detail, dict(values or {}), hardware_id)


def age_text(age_s: float | None) -> str:
    return "never" if age_s is None else f"{age_s:.1f} s ago"


# ---------------------------------------------------------------------------------------------- planner
class ProbeResult(Protocol):
    """What an LLM probe found (sayplan_core.llm.selection.LlmProbe)."""

    @property
    def ok(self) -> bool: ...
    @property
    def backend(self) -> str: ...
    @property
    def detail(self) -> str: ...


def llm_status(probe: ProbeResult | None, age_s: float | None, stale_after_s: float, hardware_id: str = "") -> Status:
    """The LLM backend's reachability from the last probe: OK or ERROR with the probe's words; STALE before the
    first probe ended or when the last one is older than `stale_after_s` (the prober is stuck or gone)."""
    if probe is None or age_s is None:
        return Status("LLM backend", Level.STALE, "not probed yet", {"last probe": "never"}, hardware_id)
    values = {"backend": probe.backend, "reachable": str(probe.ok).lower(), "last probe": age_text(age_s)}
    if age_s > stale_after_s:
        message = f"last probe {age_text(age_s)} (over {stale_after_s:g} s): {probe.detail}"
        return Status("LLM backend", Level.STALE, message, values, hardware_id)
    level = Level.OK if probe.ok else Level.ERROR
    prefix = f"{probe.backend}: " if probe.backend and not probe.detail.startswith(probe.backend) else ""
    return Status("LLM backend", level, f"{prefix}{probe.detail}", values, hardware_id)


# ---------------------------------------------------------------------------------------------- scene graph
def graph_status(version: int, epoch: int, nodes: int, journal: str, hardware_id: str = "") -> Status:
    """The scene graph the server holds: its version (bumped by every accepted update), this start's epoch and
    its size; `journal` is the journal's folder ('' when updates are not journaled, which is a WARN only when
    asked for by the caller: here it is reported, not judged)."""
    values = {
        "version": str(version),
        "epoch": str(epoch),
        "nodes": str(nodes),
        "journal": journal or "off",
    }
    return Status("scene graph", Level.OK, f"version {version}, {nodes} nodes", values, hardware_id)


def journal_status(journal: str, problem: str, hardware_id: str = "") -> Status:
    """The graph journal: OK when off or writing, ERROR with `problem` when a write or snapshot failed."""
    if not journal:
        return Status("graph journal", Level.OK, "off (updates are not journaled)", {"journal": "off"}, hardware_id)
    if problem:
        return Status("graph journal", Level.ERROR, problem, {"journal": journal}, hardware_id)
    return Status("graph journal", Level.OK, f"journaling to {journal}", {"journal": journal}, hardware_id)


# ---------------------------------------------------------------------------------------------- executor
def executor_status(task: str, missing: Iterable[str], rivals: Iterable[str] = (), hardware_id: str = "") -> Status:
    """The running task (or idle) and the servers the executor cannot see: WARN while any is missing (a task would
    fail at the step that needs it); ERROR while more than one node offers one of its services (`rivals`, each a
    problem's text: no answer of that service is taken)."""
    gone = sorted(missing)
    claims = sorted(rivals)
    values = {
        "task": task or "idle",
        "missing servers": ", ".join(gone) or "none",
        "rival servers": "; ".join(claims) or "none",
    }
    doing = f"running '{task}'" if task else "idle"
    if claims:
        return Status("executor", Level.ERROR, f"{doing}; {'; '.join(claims)}", values, hardware_id)
    if gone:
        return Status("executor", Level.WARN, f"{doing}; no server for {', '.join(gone)}", values, hardware_id)
    return Status("executor", Level.OK, f"{doing}; every server is there", values, hardware_id)


# ---------------------------------------------------------------------------------------------- graph followers
def follower_status(version: int, problem: str, served: int, failed: int, hardware_id: str = "") -> Status:
    """The copy of the scene graph a node plans on: WARN before the first graph (it cannot answer yet), ERROR
    while the copy is out of sync with the server (`problem`); with the requests answered and refused."""
    values = {"version": str(version), "answered": str(served), "refused": str(failed), "problem": problem or "none"}
    if problem:
        return Status("scene graph copy", Level.ERROR, f"out of sync: {problem}", values, hardware_id)
    if version == 0:
        return Status("scene graph copy", Level.WARN, "no scene graph received yet", values, hardware_id)
    return Status("scene graph copy", Level.OK, f"version {version}", values, hardware_id)


def perception_status(fused: int, skipped: int, sent: int, waiting: int, hardware_id: str = "") -> Status:
    """Perception's fusion: frames fused and skipped (detections with no matching depth image, pose or camera
    info), updates sent to the graph server, and those waiting to be sent again (refused or not answered: the next
    frame or finalize sends their placements again): WARN while any waits."""
    values = {"frames fused": str(fused), "frames skipped": str(skipped), "updates sent": str(sent)}
    values["updates waiting"] = str(waiting)
    if waiting:
        return Status("perception", Level.WARN, f"{waiting} graph update(s) not applied yet", values, hardware_id)
    return Status("perception", Level.OK, f"{fused} frame(s) fused, {skipped} skipped", values, hardware_id)


# ---------------------------------------------------------------------------------------------- lifecycle manager
def manager_status(
    nodes: Iterable[str], active: bool, last: tuple[str, bool, str] | None, hardware_id: str = ""
) -> Status:
    """The managed nodes as the lifecycle manager last left them: OK when every one is active, ERROR when its last
    command failed (the message says which node and why: a planner whose LLM is dead), WARN otherwise (starting,
    paused, reset)."""
    names = ", ".join(nodes) or "no nodes"
    command, ok, message = last if last is not None else ("", True, "")
    values = {"nodes": names, "active": str(active).lower(), "last command": command or "none"}
    if last is not None and not ok:
        return Status("managed nodes", Level.ERROR, f"{command} failed: {message}", values, hardware_id)
    if active:
        return Status("managed nodes", Level.OK, f"active: {names}", values, hardware_id)
    doing = f"after {command}: {message}" if command else "starting up"
    return Status("managed nodes", Level.WARN, f"not active ({doing})", values, hardware_id)
