"""Spot's part of /diagnostics: what the session last saw, read without asking the robot (every call to it blocks,
and the diagnostics timer must not)."""

from __future__ import annotations

from dataclasses import replace

from sayplan_core.diagnostics import Level, Status, age_text, link_status
from sayplan_spot.robot.session import Session


def health(session: Session, hardware_id: str = "") -> list[Status]:
    """Spot's session (connected, time-synced), the body lease, and the e-stop, motors and gripper as last seen;
    from state the session already holds (no RPC: the robot may not answer, and this runs in a timer)."""
    sdk_robot = session.robot
    config = session.config
    statuses: list[Status] = []
    where = config.hostname
    if sdk_robot is None:
        statuses.append(link_status("robot link", False, f"no session with Spot at {where}", {"host": where}))
    else:
        try:
            synced = bool(sdk_robot.time_sync.has_established_time_sync)
        except Exception:  # the SDK's time-sync thread is gone
            synced = False
        values = {"host": where, "serial": session.serial, "time sync": "established" if synced else "not established"}
        detail = f"session with Spot {session.serial} at {where}" + ("" if synced else ": time sync not established")
        failed = session.seen.check_in_failure()
        # the keep-alive checks in every lease_check_in_s: a failure within three of them is a link that is down
        recent = failed is not None and failed[1] < 3 * config.lease_check_in_s + config.rpc_timeout_s
        if failed is not None and recent:
            detail = f"lease check-ins do not reach Spot at {where} ({failed[0]}, {age_text(failed[1])})"
        statuses.append(link_status("robot link", synced and not recent, detail, values))
    problem = session.lease_problem
    held = sdk_robot is not None and session.keeping_lease and not problem
    if problem:  # lost: another client took it, or it was revoked
        statuses.append(link_status("lease", False, problem, {"held": "false"}))
    else:  # not held before activation: WARN only
        lease = "held by this node" if held else "not held (the node takes it when activated)"
        statuses.append(link_status("lease", held, lease, {"held": str(held).lower()}, down_level=Level.WARN))
    for what, name, if_true, if_false, error_if in (
        ("estopped", "e-stop", "pressed: release it, then clear the fault", "released", True),
        ("powered", "motors", "on", "off (skills never power them on)", False),
        ("holding", "gripper", "holding something", "empty", None),  # reported, judged by the skill server
    ):
        seen = session.seen.get(what)
        if seen is None:
            statuses.append(Status(name, Level.OK, "not read yet", {"last read": "never"}))
            continue
        value, age = seen
        level = Level.ERROR if value is error_if else Level.OK
        statuses.append(Status(name, level, if_true if value else if_false, {"last read": age_text(age)}))
    return [replace(s, hardware_id=hardware_id) for s in statuses]
