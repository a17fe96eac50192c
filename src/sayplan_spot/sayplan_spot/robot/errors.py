"""What went wrong on Spot, in one typed error: the SDK's exceptions and statuses become a SkillCode and the robot's
own words (the tables are sayplan_spot.failures), so every concern of the robot reports failures the same way."""

from __future__ import annotations

from typing import Any

from bosdyn.api.lease_pb2 import LeaseUseResult
from bosdyn.api.robot_state_pb2 import BehaviorFault
from bosdyn.client.exceptions import Error as SdkError
from bosdyn.client.exceptions import LeaseUseError, ResponseError, RpcError
from bosdyn.client.lease import Error as LeaseWalletError
from bosdyn.client.lease import ResourceAlreadyClaimedError
from bosdyn.client.time_sync import TimeSyncError

from sayplan_core.outcomes import SkillCode
from sayplan_spot import failures as sf


class SpotError(Exception):
    """A primitive or the session failed: the typed code and the robot's own message."""

    def __init__(self, code: SkillCode, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.missing = missing  # a grasp where the object should be found nothing there (it is not there)


def fault_from(exc: BaseException, doing: str) -> SpotError:
    """The typed fault for an SDK exception raised while `doing` something."""
    if isinstance(exc, SpotError):
        return exc
    if isinstance(exc, ResourceAlreadyClaimedError):
        owner = exc.response.lease_owner.client_name or "another client"
        return SpotError(
            SkillCode.LEASE_LOST,
            f"{doing}: the body lease is held by {owner}; release it (tablet: release control) or set take_lease",
        )
    if isinstance(exc, LeaseUseError):
        result = exc.lease_use_result
        status = LeaseUseResult.Status.Name(result.status)
        owner = result.owner.client_name or "another client"
        return SpotError(sf.LEASE_USE.get(status, SkillCode.LEASE_LOST), f"{doing}: lease lost to {owner} ({status})")
    if isinstance(exc, LeaseWalletError):
        return SpotError(SkillCode.LEASE_LOST, f"{doing}: the lease is no longer ours ({exc})")
    refused = _response_status(exc)
    if refused is not None:
        kind, status = refused
        text = str(getattr(exc, "error_message", "") or "")
        words = f": {text}" if text else ""
        return SpotError(sf.refusal(kind, status), f"{doing}: the robot refused ({kind} {sf.explain(status)}){words}")
    if isinstance(exc, RpcError):
        return SpotError(SkillCode.ROBOT_FAULT, f"{doing}: no answer from the robot ({exc})")
    if isinstance(exc, TimeSyncError):
        return SpotError(SkillCode.ROBOT_FAULT, f"{doing}: no time sync with the robot ({type(exc).__name__})")
    if isinstance(exc, SdkError):
        return SpotError(SkillCode.ROBOT_FAULT, f"{doing}: {type(exc).__name__}: {exc}")
    return SpotError(SkillCode.INTERNAL_ERROR, f"{doing}: {type(exc).__name__}: {exc}")


def _response_status(exc: BaseException) -> tuple[str, str] | None:
    """(response type, `status` enum value name) of a refused response, when the exception carries one."""
    response: Any = getattr(exc, "response", None) if isinstance(exc, ResponseError) else None
    if response is None:
        return None
    field = response.DESCRIPTOR.fields_by_name.get("status")
    if field is None or field.enum_type is None:
        return None
    value = field.enum_type.values_by_number.get(response.status)
    return (str(response.DESCRIPTOR.name), str(value.name)) if value is not None else None


def enum_name(enum: Any, value: int) -> str:
    return str(enum.Name(value))


def behaviour_faults(state: Any) -> str:
    """The robot's behaviour faults in words ('' when there are none): id, cause and whether it can be cleared
    (robot_state.proto BehaviorFault)."""
    faults = list(state.behavior_fault_state.faults)
    if not faults:
        return ""
    described = ", ".join(
        f"{f.behavior_fault_id} ({enum_name(BehaviorFault.Cause, f.cause)}, "
        f"{enum_name(BehaviorFault.Status, f.status)})"
        for f in faults
    )
    return f"the robot has behaviour fault(s) {described}: clear them on the tablet"
