"""Where the built stack and the demo's recorded run live, for the tests that start the stack as processes."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WS_ENV = ROOT / "scripts" / "ws_env.sh"
BIN = ROOT / "install" / "sayplan_ros" / "lib" / "sayplan_ros"
#: The demo task's recorded LLM answers, replayed so the stack plans without a remote model.
TRANSCRIPT = ROOT / "src" / "sayplan_ros" / "transcripts" / "demo_office_lh05.json"
INSTRUCTION = "Make Niko a coffee and place the mug on his desk."
