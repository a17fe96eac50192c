"""Where the built stack and the demo's recorded run live, for the tests that start the stack as processes."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WS_ENV = ROOT / "scripts" / "ws_env.sh"
BIN = ROOT / "install" / "sayplan_ros" / "lib" / "sayplan_ros"
#: The demo task's recorded LLM answers, replayed so the stack plans without a remote model.
TRANSCRIPT = ROOT / "src" / "sayplan_ros" / "transcripts" / "demo_office_lh05.json"
INSTRUCTION = "Make Niko a coffee and place the mug on his desk."
#: The stack's Fast DDS profile: a participant killed with SIGKILL is dropped by its peers after 4 s, not Fast DDS's
#: default 20 s (config/dds/fastdds_liveness.xml says why). A test that kills a process of the stack gives it this.
LIVENESS_PROFILE = ROOT / "config" / "dds" / "fastdds_liveness.xml"
#: where Fast DDS reads a profiles file's path from (as launch/sayplan.launch.py sets them)
PROFILE_VARIABLES = ("FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE")


def process_env(domain_id: int) -> dict[str, str]:
    """The environment of a stack process a test starts on its own DDS domain, with the stack's liveness profile."""
    import os

    profile = dict.fromkeys(PROFILE_VARIABLES, str(LIVENESS_PROFILE))  # Fast DDS 2 reads the first, 3 the second
    return {**os.environ, "ROS_DOMAIN_ID": str(domain_id), **profile}
