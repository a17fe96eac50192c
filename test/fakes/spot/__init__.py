"""A fake Boston Dynamics Spot at the protocol boundary: the real gRPC services of the Spot API, over TLS on
loopback, with a login token, for the unmodified bosdyn-client SDK to drive.

    with FakeSpot.running(tmp_path) as spot:
        spot.world.grasp_failures["coffee_mug"] = 1     # programmable per test
        ... the adapter connects to 127.0.0.1:spot.port with spot.ca_path, user/password from spot.world ...
        spot.calls("NavigateTo")                          # what the client sent, in order

Every RPC except the login (auth) and robot-id must carry `authorization: Bearer <token>` from the login; the
directory lists the services (bosdyn/api/directory.proto) with the authorities the SDK opens TLS channels
for; the server certificate is made at test time for those names (certs.py).
"""

from __future__ import annotations

import os

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # keep gRPC's own info logs out of the test output

import copy
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from bosdyn.api import (
    auth_service_pb2_grpc,
    directory_service_pb2_grpc,
    estop_service_pb2_grpc,
    image_service_pb2_grpc,
    lease_service_pb2_grpc,
    manipulation_api_service_pb2_grpc,
    power_service_pb2_grpc,
    robot_command_service_pb2_grpc,
    robot_id_service_pb2_grpc,
    robot_state_service_pb2_grpc,
    time_sync_service_pb2_grpc,
    world_object_service_pb2_grpc,
)
from bosdyn.api.graph_nav import graph_nav_service_pb2_grpc

from . import services
from .certs import make_tls
from .world import FakeHandle, FakeObject, FakeWorld, Se2, Waypoint

__all__ = ["FakeHandle", "FakeObject", "FakeSpot", "FakeWorld", "Se2", "Waypoint"]

#: RPCs that need no login token: logging in, and asking who the robot is.
OPEN_METHODS = frozenset({"/bosdyn.api.AuthService/GetAuthToken", "/bosdyn.api.RobotIdService/GetRobotId"})


class _Gate(grpc.ServerInterceptor):
    """Checks the login token and records every request (a copy) with its method name."""

    def __init__(self, spot: FakeSpot) -> None:
        self.spot = spot

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None:
            return handler
        method = details.method
        spot = self.spot

        def admit(request: Any, context: Any) -> None:
            metadata = dict(context.invocation_metadata())
            if method not in OPEN_METHODS and metadata.get("authorization") != f"Bearer {spot.auth.token}":
                spot.refused.append(method)
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid user token is required")
            name = method.rsplit("/", 1)[-1]
            with spot.lock:
                spot.requests.append((name, copy.deepcopy(request)))
                failing = spot.failing.get(name)
            if failing is not None and failing(request):
                context.abort(grpc.StatusCode.UNAVAILABLE, f"{name}: the robot did not answer (injected)")

        wire = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            def call(request: Any, context: Any) -> Any:
                admit(request, context)
                return unary(request, context)

            return grpc.unary_unary_rpc_method_handler(call, **wire)
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            def call_stream(request: Any, context: Any) -> Any:
                admit(request, context)
                yield from stream(request, context)

            return grpc.unary_stream_rpc_method_handler(call_stream, **wire)
        return handler


class FakeSpot:
    def __init__(self, folder: Path, world: FakeWorld | None = None) -> None:
        self.world = world or FakeWorld()
        self.lock = threading.Lock()
        self.requests: list[tuple[str, Any]] = []
        self.refused: list[str] = []
        #: RPC name (e.g. "GetRobotState") -> which of its requests go unanswered (UNAVAILABLE), programmable
        self.failing: dict[str, Callable[[Any], bool]] = {}
        self.tls = make_tls(folder, services.AUTHORITIES)
        self.auth = services.Auth(self.world)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=12), interceptors=[_Gate(self)])
        w = self.world
        for add, servicer in (
            (auth_service_pb2_grpc.add_AuthServiceServicer_to_server, self.auth),
            (robot_id_service_pb2_grpc.add_RobotIdServiceServicer_to_server, services.RobotId(w)),
            (directory_service_pb2_grpc.add_DirectoryServiceServicer_to_server, services.Directory(w)),
            (time_sync_service_pb2_grpc.add_TimeSyncServiceServicer_to_server, services.TimeSync(w)),
            (lease_service_pb2_grpc.add_LeaseServiceServicer_to_server, services.Lease(w)),
            (estop_service_pb2_grpc.add_EstopServiceServicer_to_server, services.Estop(w)),
            (power_service_pb2_grpc.add_PowerServiceServicer_to_server, services.Power(w)),
            (robot_state_service_pb2_grpc.add_RobotStateServiceServicer_to_server, services.RobotState(w)),
            (robot_command_service_pb2_grpc.add_RobotCommandServiceServicer_to_server, services.RobotCommand(w)),
            (manipulation_api_service_pb2_grpc.add_ManipulationApiServiceServicer_to_server, services.Manipulation(w)),
            (graph_nav_service_pb2_grpc.add_GraphNavServiceServicer_to_server, services.GraphNav(w)),
            (world_object_service_pb2_grpc.add_WorldObjectServiceServicer_to_server, services.WorldObjects(w)),
            (image_service_pb2_grpc.add_ImageServiceServicer_to_server, services.Image(w)),
        ):
            add(servicer, self.server)
        credentials = grpc.ssl_server_credentials([(self.tls.key_pem, self.tls.cert_pem)])
        self.port = self.server.add_secure_port("127.0.0.1:0", credentials)

    @property
    def ca_path(self) -> Path:
        return self.tls.ca_path

    @classmethod
    @contextmanager
    def running(cls, folder: Path, world: FakeWorld | None = None) -> Iterator[FakeSpot]:
        spot = cls(folder, world)
        spot.server.start()
        try:
            yield spot
        finally:
            spot.server.stop(grace=None)

    def calls(self, method: str) -> list[Any]:
        """The requests of one RPC (e.g. "NavigateTo"), in the order they arrived."""
        with self.lock:
            return [request for name, request in self.requests if name == method]

    def methods(self) -> list[str]:
        with self.lock:
            return [name for name, _ in self.requests]
