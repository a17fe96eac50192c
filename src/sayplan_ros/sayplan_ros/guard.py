"""Callbacks that cannot take the process down.

An exception that escapes a callback stops rclpy's executor and with it every node of
the process. Input from the ROS graph is untrusted, so every subscription and service
callback of the stack is wrapped: an unexpected error is logged with what was being
handled, a service still answers (with the error in its message), and the node lives on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from rclpy.node import Node

T = TypeVar("T")


def guarded(node: Node, what: str, callback: Callable[..., Any]) -> Callable[..., None]:
    """A subscription callback that logs and drops what it cannot handle."""

    @functools.wraps(callback)
    def call(*args: Any) -> None:
        try:
            callback(*args)
        except Exception as exc:
            if not node.context.ok():  # shutting down: the publishers it used are gone, nothing to report
                return
            node.get_logger().error(f"dropped a {what} message it could not handle: {exc!r}")

    return call


def guarded_service(
    node: Node, handler: Callable[[Any, T], T], response_type: Callable[[], T]
) -> Callable[[Any, T], T]:
    """A service callback that answers `internal error: ...` (in `message` / `feedback`) instead of raising."""

    @functools.wraps(handler)
    def call(request: Any, response: T) -> T:
        try:
            return handler(request, response)
        except Exception as exc:
            node.get_logger().error(f"{handler.__name__} failed on a request: {exc!r}")
            answer = response_type()
            for field in ("message", "feedback"):
                if hasattr(answer, field):
                    setattr(answer, field, f"internal error: {exc!r}")
            return answer

    return call
