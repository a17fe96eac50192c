"""The core numbers action goals' terminal states itself (it imports no ROS package): they must be
action_msgs/GoalStatus's, which every node uses directly."""

from __future__ import annotations

import pytest

from sayplan_core import outcomes

action_msgs = pytest.importorskip("action_msgs.msg", reason="action_msgs is not importable: run through `make test`")


def test_the_cores_goal_states_are_action_msgs_goal_status() -> None:
    status = action_msgs.GoalStatus
    assert outcomes.STATUS_SUCCEEDED == status.STATUS_SUCCEEDED
    assert outcomes.STATUS_CANCELED == status.STATUS_CANCELED
    assert outcomes.STATUS_ABORTED == status.STATUS_ABORTED
