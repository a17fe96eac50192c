#!/usr/bin/env python3
"""Success rates of a real embedded model through the planners, next to the SayPlan paper's GPT-4 and GPT-3.5.

    make local-llm PACKS=all
    scripts/ws_env.sh python scripts/bench_real_model.py run main          # resumable: run it again to go on
    scripts/ws_env.sh python scripts/bench_real_model.py run subset        # ablations, models, other planners
    scripts/ws_env.sh python scripts/bench_real_model.py run search        # an aid tried on the search tasks
    scripts/ws_env.sh python scripts/bench_real_model.py status
    scripts/ws_env.sh python scripts/bench_real_model.py write docs/measured/real_model.md

Each configuration is one `sayplan bench` into docs/measured/real_model/<name>/ (results.jsonl, report.md), which
resumes where an earlier run stopped: a run cut off by the end of a working day goes on from the next task. The task
sets are drawn from SayPlan's 90 instructions with a fixed seed: `main` is 5 tasks of each of the paper's four
families (`sayplan bench --per-family 5 --seed 0`), the shared subset the first two simple-search and the first two
simple-planning tasks of it. `write` makes the Markdown file from whatever results exist; a configuration not run
yet is listed with the command that runs it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import measured_doc

from sayplan_core.bench.report import FAILURE_CLASSES, failure_class, summarise
from sayplan_core.bench.runner import load_results
from sayplan_core.envs.tasks import load_tasks, sample_per_family
from sayplan_core.llm import model_packs
from sayplan_core.planners import PlannerOptions

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "measured" / "real_model"
SEED = 0
PER_FAMILY = 5
#: every aid of planners/aids.py on (legal_commands and no_repeat are the defaults; reveal_names and a limit on the
#: free text are not)
AIDS_ON = (
    *("--legal-commands", "true", "--no-repeat", "true", "--reveal-names", "true"),
    *("--search-example", "true", "--thought-chars", "300", "--plan-steps", "30"),
)
AIDS_OFF = (
    *("--legal-commands", "false", "--no-repeat", "false", "--reveal-names", "false"),
    *("--search-example", "false", "--thought-chars", "0", "--plan-steps", "0"),
)
#: the budget of one task: 12 calls of 15-120 s bound a task to about 15 minutes on two cores; 640 answer tokens
#: hold the longest plan the aids allow (30 steps of about 13 tokens, two 300-character thoughts), and stop a model
#: that loops without them after two minutes, not at the call's deadline
BUDGET = ("--max-calls", "12", "--max-answer-tokens", "640")

# SayPlan (Rana et al., CoRL 2023), table 1 (semantic search success, office / home) and table 3 (causal planning:
# correctness / executability; the planning tasks are the office's)
PAPER_SEARCH = {
    "simple_search": {"GPT-4": ("86.7%", "86.7%"), "GPT-3.5": ("6.6%", "0.0%")},
    "complex_search": {"GPT-4": ("73.3%", "73.3%"), "GPT-3.5": ("0.0%", "0.0%")},
}
PAPER_PLANNING = {
    "simple_planning": {
        "sayplan": ("93.3%", "100.0%"),
        "llm_p": ("93.3%", "13.3%"),
        "llm_as_planner": ("93.3%", "80.0%"),
    },
    "long_horizon": {"sayplan": ("73.3%", "86.6%"), "llm_p": ("33.3%", "0.0%"), "llm_as_planner": ("66.7%", "13.3%")},
}


def with_flags(flags: tuple[str, ...], *changes: str) -> tuple[str, ...]:
    """`flags` (pairs of flag and value) with each flag of `changes` (pairs too) set to its new value in place, so a
    command names each flag once."""
    pairs = dict(zip(flags[::2], flags[1::2], strict=True))
    pairs.update(zip(changes[::2], changes[1::2], strict=True))
    return tuple(x for pair in pairs.items() for x in pair)


@dataclass(frozen=True)
class Config:
    name: str
    planner: str
    model: str
    flags: tuple[str, ...]
    what: str
    tasks: str = "subset"  # the shared subset; "main": the main task set; "search": the main set's search tasks

    def command(self, tasks: list[str]) -> list[str]:
        out = RESULTS / self.name
        return [
            "sayplan", "bench", "--planners", self.planner, "--llm", "local", "--model", self.model,
            "--ids", ",".join(tasks), *BUDGET, *self.flags, "--out", str(out), "--record-dir", str(out / "transcripts"),
        ]  # fmt: skip


CONFIGS = (
    Config("sayplan_qwen-1.5b", "sayplan", "qwen-1.5b", AIDS_ON, "SayPlan, every aid on", tasks="main"),
    Config("sayplan_qwen-1.5b_no-aids", "sayplan", "qwen-1.5b", AIDS_OFF, "ablation: no aid"),
    Config("sayplan_qwen-1.5b_no-legal", "sayplan", "qwen-1.5b", with_flags(AIDS_ON, "--legal-commands", "false"),
           "ablation: every aid but legal commands"),
    Config("sayplan_qwen-1.5b_no-repeat-guard", "sayplan", "qwen-1.5b", with_flags(AIDS_ON, "--no-repeat", "false"),
           "ablation: every aid but no repeats"),
    Config("sayplan_qwen-1.5b_no-names", "sayplan", "qwen-1.5b", with_flags(AIDS_ON, "--reveal-names", "false"),
           "ablation: every aid but names in the feedback"),
    Config("sayplan_qwen-1.5b_no-search-example", "sayplan", "qwen-1.5b",
           with_flags(AIDS_ON, "--search-example", "false"),
           "ablation: every aid but the search example"),
    Config("sayplan_qwen-1.5b_no-length-limits", "sayplan", "qwen-1.5b",
           with_flags(AIDS_ON, "--thought-chars", "0", "--plan-steps", "0"),
           "ablation: every aid but the length limits"),
    Config("sayplan_qwen-0.5b", "sayplan", "qwen-0.5b", AIDS_ON, "model: Qwen2.5-Coder 0.5B"),
    Config("sayplan_gemma-270m", "sayplan", "gemma-270m", AIDS_ON, "model: Gemma 3 270M"),
    Config("sayplan_lite_qwen-1.5b", "sayplan_lite", "qwen-1.5b", AIDS_ON, "planner: SayPlan Lite"),
    Config("llm_as_planner_qwen-1.5b", "llm_as_planner", "qwen-1.5b", (), "planner: LLM-As-Planner"),
    Config("lookplangraph_qwen-1.5b", "lookplangraph", "qwen-1.5b", (), "planner: LookPlanGraph"),
    Config("lookplangraph_qwen-1.5b_no-repeat-guard", "lookplangraph", "qwen-1.5b", ("--no-repeat", "false"),
           "planner: LookPlanGraph without its one aid, no repeats"),
    Config("sayplan_qwen-1.5b_matches", "sayplan", "qwen-1.5b", with_flags(AIDS_ON, "--instruction-matches", "true"),
           "every aid and what the instruction names", tasks="search"),
)  # fmt: skip
GROUPS = {group: tuple(c.name for c in CONFIGS if c.tasks == group) for group in ("main", "subset", "search")}


def main_tasks() -> list[str]:
    return [t.id for t in sample_per_family(load_tasks(), PER_FAMILY, SEED)]


def subset_tasks() -> list[str]:
    """The shared subset: the first two simple-search and simple-planning tasks of the main set, in file order."""
    chosen = sample_per_family(load_tasks(), PER_FAMILY, SEED)
    pick = [t for t in chosen if t.family == "simple_search"][:2]
    pick += [t for t in chosen if t.family == "simple_planning"][:2]
    return [t.id for t in pick]


def search_tasks() -> list[str]:
    """The main set's simple- and complex-search tasks, where a model that searches on with the item in view fails."""
    return [t.id for t in sample_per_family(load_tasks(), PER_FAMILY, SEED) if t.family.endswith("_search")]


def tasks_of(config: Config) -> list[str]:
    if config.tasks == "main":
        return main_tasks()
    return search_tasks() if config.tasks == "search" else subset_tasks()


def rows_of(config: Config) -> list[dict[str, Any]]:
    folder = RESULTS / config.name
    return load_results(folder) if (folder / "results.jsonl").exists() else []


def run(names: list[str]) -> int:
    wanted = [c for c in CONFIGS if c.name in names or any(c.name in GROUPS.get(n, ()) for n in names)]
    unknown = [n for n in names if n not in GROUPS and all(c.name != n for c in CONFIGS)]
    if unknown:
        print(f"bench_real_model: unknown configuration(s) {', '.join(unknown)}; see `status`", file=sys.stderr)
        return 2
    for config in wanted:
        print(f"== {config.name}: {config.what}", flush=True)
        done = subprocess.run(config.command(tasks_of(config)), check=False)
        if done.returncode not in (0, 3):  # 3: some runs raised; they are in the report and rerun on a resume
            return done.returncode
    return 0


def status() -> int:
    for config in CONFIGS:
        rows = rows_of(config)
        print(f"{config.name:<36} {len(rows)}/{len(tasks_of(config))} runs  {config.what}")
    return 0


def pct(values: list[bool]) -> str:
    return f"{100.0 * sum(values) / len(values):.0f}% ({sum(values)}/{len(values)})" if values else "-"


def success(row: dict[str, Any]) -> bool:
    return failure_class(row) == ""


def family_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| family | runs | success | search success | executability | correctness | paper GPT-4 | paper GPT-3.5 "
        "| calls | tokens | s/task (median) | replans |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_family = {s["family"]: s for s in summarise(rows)}
    for family in ("simple_search", "complex_search", "simple_planning", "long_horizon"):
        items = [r for r in rows if r["family"] == family]
        if not items:
            continue
        s = by_family[family]
        search = [bool(r["search_success"]) for r in items if r["search_success"] is not None]
        planning = [r for r in items if r["correct"] is not None]
        if family in PAPER_SEARCH:
            gpt4, gpt35 = (f"{a} / {b} (office / home)" for a, b in PAPER_SEARCH[family].values())
        else:
            corr, execu = PAPER_PLANNING[family]["sayplan"]
            gpt4, gpt35 = f"correctness {corr}, executability {execu}", "-"
        lines.append(
            f"| {family} | {len(items)} | {pct([success(r) for r in items])} | {pct(search)} "
            f"| {pct([bool(r['executable']) for r in planning])} | {pct([bool(r['correct']) for r in planning])} "
            f"| {gpt4} | {gpt35} | {s['calls']} | {s['tokens']} | {s.get('s/task (median)', '-')} | {s['replans']} |"
        )
    return lines


def runs_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| task | family | result | calls | tokens | s | how it ended |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        kind = failure_class(r)
        message = str(r.get("message") or "").replace("|", "/").replace("\n", " ")
        if len(message) > 140:
            message = message[:137] + "..."
        lines.append(
            f"| {r['task']} | {r['family']} | {kind if kind else 'success'} | {r['llm_calls']} "
            f"| {r['prompt_tokens'] + r['completion_tokens']} | {r['elapsed_s']:.0f} | {message} |"
        )
    return lines


def compare_table(configs: list[Config]) -> list[str]:
    lines = [
        "| configuration | runs | success | calls | tokens | s/task (median) | read tok/s | write tok/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    subset = set(subset_tasks())
    for config in configs:
        rows = [r for r in rows_of(config) if r["task"] in subset]
        if not rows:
            lines.append(f"| {config.what}: not run yet (`bench_real_model.py run {config.name}`) | 0 | | | | | | |")
            continue
        (s,) = [x for x in summarise(rows) if x["family"] == "all"]
        lines.append(
            f"| {config.what} (`{config.name}`) | {len(rows)} | {pct([success(r) for r in rows])} | {s['calls']} "
            f"| {s['tokens']} | {s.get('s/task (median)', '-')} | {s.get('read tok/s', '-')} "
            f"| {s.get('write tok/s', '-')} |"
        )
    return lines


def matches_section(main: Config, main_rows: list[dict[str, Any]]) -> list[str]:
    """The search tasks with the `instruction_matches` aid, beside the main run's rows of the same tasks."""
    config = next(c for c in CONFIGS if c.tasks == "search")
    rows = rows_of(config)
    text = ["", f"## The search tasks with what the instruction names in the feedback (`{config.name}`)", ""]
    if not rows:
        return [*text, f"Not run yet: `scripts/ws_env.sh python scripts/bench_real_model.py run {config.name}`."]
    wanted = set(search_tasks())
    text += [f"Every aid of `{main.name}` plus `--instruction-matches true`:", "", *family_table(rows)]
    text += ["", "The same tasks in the main run, without it:", ""]
    text += family_table([r for r in main_rows if r["task"] in wanted])
    text += ["", "How each run ended:", "", *runs_table(rows)]
    if len(rows) < len(wanted):
        text.append(
            f"\n{len(rows)} of {len(wanted)} tasks run so far; `scripts/ws_env.sh python scripts/bench_real_model.py "
            f"run {config.name}` resumes the rest."
        )
    return text


def runtime() -> str:
    """The llama.cpp build the runs used: its version and the CPU features it was compiled for."""
    try:
        import llama_cpp
    except ImportError:
        return "llama-cpp-python is not installed"
    features = llama_cpp.llama_print_system_info().decode().replace("CPU :", "").strip(" |\n")
    on = [f.split("=")[0].strip() for f in features.split("|") if f.strip().endswith("= 1")]
    return f"llama-cpp-python {llama_cpp.__version__}, llama.cpp built for {', '.join(on)}"


def load_note(rows: list[dict[str, Any]]) -> str:
    """The machine's load average when each run ended (the speeds above depend on it), as far as recorded."""
    loads = sorted(float(r["load_1m"]) for r in rows if isinstance(r.get("load_1m"), (int, float)))
    missing = len(rows) - len(loads)
    if not loads:
        return "the load during the runs was not recorded"
    text = f"load average (1 min) at the end of the runs {loads[0]:g}-{loads[-1]:g} on 2 cores"
    return text + (f" ({missing} run(s) before it was recorded)" if missing else "")


def write(path: Path) -> int:
    main = next(c for c in CONFIGS if c.tasks == "main")
    rows = rows_of(main)
    packs = sorted({c.model for c in CONFIGS})
    defaults = PlannerOptions()
    text = ["## The model files", ""]
    for name in packs:
        pack = model_packs.PACKS[name]
        text.append(
            f"- `{name}`: {pack.file_name}, {pack.size:,} bytes, SHA-256 `{pack.sha256}` (checked on every load)"
        )
    text += ["", f"Runtime: {runtime()} (scripts/install_local_llm.sh picks the CPU flags)."]
    text += [
        "",
        f"Tasks: `main` is {PER_FAMILY} tasks of each family drawn with seed {SEED} "
        f"({', '.join(main_tasks())}); the shared subset is {', '.join(subset_tasks())}. Budget per task: "
        f"{' '.join(BUDGET)}, up to {defaults.max_replans} replanning rounds, {defaults.max_search_steps} search "
        "steps. Each configuration's runs are in "
        "real_model/<name>/results.jsonl, their LLM exchanges in real_model/<name>/transcripts/.",
        "",
        f"## SayPlan with Qwen2.5-Coder 1.5B, every aid on (`{main.name}`)",
        "",
    ]
    if rows:
        text += family_table(rows)
        text += ["", "How each run ended:", "", *runs_table(rows)]
        (overall,) = [x for x in summarise(rows) if x["family"] == "all"]
        text += [
            "",
            f"Speed on this machine: median {overall.get('read tok/s', '-')} prompt tokens read per second, "
            f"{overall.get('write tok/s', '-')} answer tokens written per second, {overall['s/call']} s per call "
            f"(mean), {overall.get('s/task (median)', '-')} s per task (median); {load_note(rows)}.",
        ]
    else:
        text.append("Not run yet: `scripts/ws_env.sh python scripts/bench_real_model.py run main`.")
    done = len(rows)
    if rows and done < len(main_tasks()):
        text.append(f"\n{done} of {len(main_tasks())} tasks run so far; the command above resumes the rest.")
    text += matches_section(main, rows)
    text += ["", "## Ablations, other models and other planners on the shared subset", ""]
    text += compare_table([main] + [c for c in CONFIGS if c.tasks == "subset"])
    text += [
        "",
        "The first row is the main run's results on the subset's tasks. success: a search task's answer names the "
        "expected node, a planning task's plan is verified by the simulator and meets the goal. Failure classes: "
        + ", ".join(FAILURE_CLASSES)
        + " (sayplan_core.bench.report.failure_class).",
    ]
    measured_doc.write(path, "A real model plans: success rates on this machine", "\n".join(text))
    return 0


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run configurations (names, or the groups main / subset / search); resumable")
    p.add_argument("names", nargs="+")
    sub.add_parser("status", help="how many runs each configuration has")
    p = sub.add_parser("write", help="write the Markdown file from the results there are")
    p.add_argument("path", type=Path)
    sub.add_parser("tasks", help="the task ids of the main set and of the shared subset, as JSON")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.names)
    if args.command == "status":
        return status()
    if args.command == "tasks":
        print(json.dumps({"main": main_tasks(), "subset": subset_tasks(), "search": search_tasks()}))
        return 0
    return write(args.path)


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
