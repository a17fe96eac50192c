"""`sayplan llm which|check`: which backend `--llm` means here, and whether it would answer."""

from __future__ import annotations

import argparse
from typing import Any

from sayplan_core.cli.common import EXIT_FAILED, CliError, emit
from sayplan_core.cli.plan_commands import llm_config
from sayplan_core.llm.selection import probe_llm, resolve_backend_name


def cmd_llm_which(args: argparse.Namespace) -> int:
    """The backend `--llm` means here and why; for the embedded model also its file, hash state and runtime (the
    first word stays the backend's name: the Makefile reads it)."""
    config = llm_config(args)
    config.validate()
    name, why = resolve_backend_name(config)
    payload: dict[str, Any] = {"backend": name, "reason": why}
    text = f"{name} ({why})"
    if name == "local":
        payload["local"] = local_model_state(config.model)
        text += f"; {payload['local']['summary']}"
    emit(args, payload, text)
    return 0


def local_model_state(model: str) -> dict[str, Any]:
    """Which file the embedded model would load, whether it is there and checked, and the runtime; hashes nothing
    (`sayplan llm check` does)."""
    import importlib.util

    from sayplan_core.llm import model_packs

    runtime = (
        "llama-cpp-python installed" if importlib.util.find_spec("llama_cpp") else "llama-cpp-python NOT installed"
    )
    name = model or model_packs.DEFAULT_PACK
    if name in model_packs.PACKS:
        status = model_packs.pack_status(name)
        state = {
            "not assembled": f"not assembled yet: {status.parts_installed} of {status.parts_total} parts installed",
            "not checked": "SHA-256 checked when it loads",
            "mismatch": "WRONG SIZE: it will be refused",
            "ok": "SHA-256 verified",
        }[status.hash_state]
        summary = f"model pack {name}: {status.path} ({state}); {runtime}"
        return {
            "model": name,
            "path": str(status.path),
            "state": status.hash_state,
            "runtime": runtime,
            "summary": summary,
        }
    try:
        path = str(model_packs.locate_model(name))
        state = "a file of your own: its hash is checked only if it is a known pack's"
    except model_packs.ModelPackError as exc:
        path, state = name, f"refused: {exc}"
    return {"model": name, "path": path, "state": state, "runtime": runtime, "summary": f"{path} ({state}); {runtime}"}


def cmd_llm_check(args: argparse.Namespace) -> int:
    """Exit 0 when the backend would answer, 1 when not; one line either way, and no tokens spent."""
    if not 0 < args.probe_timeout <= 600:
        raise CliError(f"--probe-timeout must be between 0 and 600 seconds, got {args.probe_timeout:g}")
    probe = probe_llm(llm_config(args), args.probe_timeout, deep=True)  # the embedded model's file is hashed too
    payload = {"ok": probe.ok, "backend": probe.backend, "detail": probe.detail}
    emit(args, payload, f"{probe.backend}: {'ok' if probe.ok else 'NOT reachable'}: {probe.detail}")
    return 0 if probe.ok else EXIT_FAILED
