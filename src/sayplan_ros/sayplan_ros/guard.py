"""Callbacks that cannot take the process down.

An exception that escapes a callback stops rclpy's executor and with it every node of
the process. Input from the ROS graph is untrusted, so every subscription and service
callback of the stack is wrapped: an unexpected error is logged with what was being
handled, a service still answers (with the error in its message), and the node lives on.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from rcl_interfaces.msg import SetParametersResult
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


def guard_services(node: Node) -> None:
    """Guard every service the node offers now that is not guarded yet, rclpy's own parameter services included:
    a SetParameters request whose value has a type number rclpy does not know (200) made its parameter service
    raise ValueError in the executor, which ended every node of the process. A failing request is now logged and
    refused: each parameter of a set request answers `successful: false` with the reason."""
    for service in node.services:
        callback = service.callback
        if getattr(callback, _GUARDED, False):
            continue
        service.callback = _refusing(node, service.srv_type, service.srv_name, callback)


_GUARDED = "__sayplan_guarded__"


def _refusing(node: Node, srv_type: Any, name: str, callback: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def refused(request: Any, exc: Exception) -> Any:
        reason = f"refused: {' '.join(str(exc).split())[:300] or type(exc).__name__}"
        node.get_logger().error(f"{name}: a request it could not handle was refused ({reason})")
        return _refusal(srv_type, request, reason)

    def checked(request: Any, answer: Any) -> Any:
        if isinstance(answer, srv_type.Response):
            return answer
        # rclpy's ~/get_type_description answers None to a type hash it cannot parse; sending anything but the
        # response type raised TypeError in the executor, which ended the process
        node.get_logger().error(f"{name}: a request it could not handle was refused (it answered a {type(answer)})")
        return _refusal(srv_type, request, "refused: the request could not be handled")

    if inspect.iscoroutinefunction(callback):  # the executor awaits an async service callback (clear_fault)

        async def call_async(request: Any, response: Any) -> Any:
            try:
                answer = await callback(request, response)
            except Exception as exc:
                return refused(request, exc)
            return checked(request, answer)

        setattr(call_async, _GUARDED, True)
        return call_async

    def call(request: Any, response: Any) -> Any:
        try:
            answer = callback(request, response)
        except Exception as exc:
            return refused(request, exc)
        return checked(request, answer)

    setattr(call, _GUARDED, True)
    return call


def _refusal(srv_type: Any, request: Any, reason: str) -> Any:
    """The service's answer to a request it could not handle: a parameter set refuses each parameter, a service
    with a success flag and a message (`success`/`message`, `successful`/`failure_reason`) says so, any other gets
    its empty response."""
    answer = srv_type.Response()
    asked = getattr(request, "parameters", None)
    if hasattr(answer, "results") and asked is not None:  # SetParameters
        answer.results = [SetParametersResult(successful=False, reason=reason) for _ in asked]
    elif hasattr(answer, "result") and asked is not None:  # SetParametersAtomically
        answer.result = SetParametersResult(successful=False, reason=reason)
    for flag in ("success", "successful"):
        if hasattr(answer, flag):
            setattr(answer, flag, False)
    for field in ("message", "feedback", "failure_reason"):
        if hasattr(answer, field):
            setattr(answer, field, reason)
    return answer
