"""The OpenAI client's CPU per call with its request body encoded by orjson (`encoded_body`) against the SDK's own
encoder, side by side in one process on whole-graph prompts of generated buildings.

    scripts/ws_env.sh python scripts/bench_llm_body.py [--rooms 1000 100] [--calls 40]

Each size's prompt (the whole graph's text, as llm_as_planner sends it) goes through `OpenAIBackend.complete` to a
local server on 127.0.0.1 that answers at once, alternating: once as the backend sends it, once with `encoded_body`
replaced by one that always leaves the body to the SDK. The figure is the median CPU time of the calling process per
call (`time.process_time`), so the server's work is not in it. Prints one line per size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import sayplan_core.llm.openai_backend as openai_backend
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.llm.types import LlmRequest

REPLY = json.dumps(
    {
        "id": "bench",
        "object": "chat.completion",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)


def _sdk_only(body: dict[str, Any]) -> bytes | None:
    return None


def measure(rooms: int, calls: int, url: str) -> tuple[float, float, float]:
    """(prompt MB, median CPU ms per call with orjson, the same through the SDK's encoder)."""
    floors = max(1, rooms // 100)
    graph = generate_building(BuildingSpec(floors=floors, rooms_per_floor=max(1, rooms // floors)))
    text = to_prompt_text(graph)
    backend = openai_backend.OpenAIBackend("bench", base_url=url)
    schema = {"type": "object", "properties": {"plan": {"type": "array", "items": {"type": "string"}}}}
    request = LlmRequest([{"role": "system", "content": "plan"}, {"role": "user", "content": text}], schema, "plan")
    ours = openai_backend.encoded_body
    times: dict[str, list[float]] = {"orjson": [], "sdk": []}
    try:
        for _ in range(calls):
            for mode in ("orjson", "sdk"):
                openai_backend.encoded_body = ours if mode == "orjson" else _sdk_only
                start = time.process_time()
                backend.complete(request)
                times[mode].append((time.process_time() - start) * 1000)
    finally:
        openai_backend.encoded_body = ours
    return len(text.encode()) / 1e6, statistics.median(times["orjson"]), statistics.median(times["sdk"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, nargs="+", default=[1000, 100], help="rooms per generated building")
    parser.add_argument("--calls", type=int, default=40, help="calls per encoder and size (medians)")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for rooms in args.rooms:
            mb, fast, sdk = measure(rooms, args.calls, f"http://127.0.0.1:{server.server_port}/v1")
            print(
                f"{rooms} rooms, {mb:.2f} MB prompt: CPU per call {fast:.2f} ms with orjson, {sdk:.2f} ms through "
                f"the SDK's encoder (ratio {fast / sdk:.2f}; medians of {args.calls} alternating calls)",
                flush=True,
            )
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
