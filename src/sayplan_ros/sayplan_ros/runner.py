"""One way to run nodes as a program: init, spin on a MultiThreadedExecutor, clean exit codes.

Whatever goes wrong while the nodes start (a bad parameter, an unreadable file, an
unreachable backend) ends the program with one line on stderr naming the cause and
exit code 2; a bug says "internal error" the same way. Ctrl-C exits 0.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

EXIT_CONFIG = 2


def describe_error(exc: BaseException) -> str:
    """One line for a person: the message, or the exception's kind when it has none."""
    text = " ".join(str(exc).split())
    known = (ValueError, OSError, KeyError, RuntimeError, LookupError)
    kind = type(exc).__name__
    if not isinstance(exc, known) and "Exception" not in kind and "Error" not in kind:
        return f"internal error: {kind}: {text}"
    return text or kind


def run_nodes(program: str, make_nodes: Callable[[], list[Node]], args: list[str] | None = None) -> None:
    """Spin the nodes until Ctrl-C; any start-up error exits 2 with one line on stderr."""
    try:
        rclpy.init(args=args)
    except Exception as exc:
        print(f"{program}: {describe_error(exc)}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    nodes: list[Node] = []
    code = 0
    executor = MultiThreadedExecutor(num_threads=4)
    try:
        nodes = make_nodes()
        for node in nodes:
            executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        print(f"{program}: {describe_error(exc)}", file=sys.stderr)
        code = EXIT_CONFIG
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    sys.exit(code)
