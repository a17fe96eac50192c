"""Spot's cameras: one image from a named image source (the gripper camera for a look), its status translated."""

from __future__ import annotations

from bosdyn.api.image_pb2 import ImageResponse
from bosdyn.client.image import ImageClient

from sayplan_core.outcomes import SkillCode
from sayplan_spot import failures as sf
from sayplan_spot.programs import Capture
from sayplan_spot.robot.errors import SpotError, enum_name
from sayplan_spot.robot.session import Session


class Imaging:
    def __init__(self, session: Session) -> None:
        self.session = session

    def capture(self, prim: Capture) -> bytes:
        client = self.session.client(ImageClient)
        responses = client.get_image_from_sources([prim.source], timeout=self.session.config.rpc_timeout_s)
        if not responses:
            raise SpotError(SkillCode.ROBOT_FAULT, f"camera {prim.source} returned nothing")
        status = enum_name(ImageResponse.Status, responses[0].status)
        code = sf.IMAGE_STATUS.get(status, SkillCode.ROBOT_FAULT)
        if code is not SkillCode.NONE:
            raise SpotError(code, f"capturing {prim.source}: {status}")
        return bytes(responses[0].shot.image.data)
