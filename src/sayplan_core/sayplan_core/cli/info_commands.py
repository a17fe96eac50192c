"""`sayplan env list` and `sayplan plugins`: what is installed, read without loading a graph."""

from __future__ import annotations

import argparse
from typing import Any

from sayplan_core.cli.common import emit
from sayplan_core.envs import list_envs


def cmd_env_list(args: argparse.Namespace) -> int:
    emit(args, {"envs": list_envs()}, "\n".join(list_envs()))
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    """The planners and robots installed (entry points), each with its options; the ones left out, and why."""
    from sayplan_core.options import table
    from sayplan_core.planners import PLANNERS
    from sayplan_core.plugins import ROBOT_REGISTRY

    def options(cls: type) -> list[dict[str, Any]]:
        return [
            {"name": s.name, "default": s.default, "range": s.range_text(), "read": s.when, "meaning": s.description}
            for s in table(cls)
        ]

    planners = [{"id": n, "summary": c.summary, "options": options(c.Options)} for n, c in PLANNERS.items()]
    robots = [
        {"id": n, "summary": r.summary, "node": r.node_name, "package": r.package, "options": options(r.Options)}
        for n, r in ROBOT_REGISTRY.items()
    ]
    left_out = PLANNERS.problems() + ROBOT_REGISTRY.problems()
    lines = ["planners:"] + [f"  {p['id']:<20} {p['summary']}" for p in planners]
    lines += ["robots:"] + [f"  {r['id']:<20} {r['summary']} (node {r['node']})" for r in robots]
    lines += [f"left out: {p}" for p in left_out]
    emit(args, {"planners": planners, "robots": robots, "left_out": left_out}, "\n".join(lines))
    return 0
