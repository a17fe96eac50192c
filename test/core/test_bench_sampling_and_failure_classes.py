"""`sayplan bench --per-family N --seed S` draws a fixed subset, and each failed run gets one class that says why.

The subset is checked against its definition on random task lists (hypothesis): N of each family (all of a smaller
one), each a task of that family, the file's order kept, the same draw for the same seed. Failure classes are
checked on rows written by real planner runs (replayed transcripts), one per way a run can end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transcripts import BAD_PLAN, FAST, GOOD_PLAN, INSTRUCTION, error, say, transcript

from sayplan_core.bench.report import FAILURE_CLASSES, failure_class, failure_table, summarise
from sayplan_core.bench.runner import call_row
from sayplan_core.cli import main as cli_main
from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import sample_per_family
from sayplan_core.llm.session import Budget, CallStats
from sayplan_core.planners import PlannerOptions, make_planner


@dataclass(frozen=True)
class FakeTask:
    id: str
    family: str


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=40),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
)
def test_per_family_draws_n_of_each_family_in_file_order(families: list[str], count: int, seed: int) -> None:
    tasks = [FakeTask(f"t{i}", family) for i, family in enumerate(families)]
    chosen = sample_per_family(tasks, count, seed)
    assert chosen == sample_per_family(tasks, count, seed)  # the seed fixes the draw
    assert [t for t in tasks if t in chosen] == chosen  # file order kept, no duplicates
    for family in set(families):
        size = families.count(family)
        assert sum(t.family == family for t in chosen) == min(size, count)


def test_the_bundled_subset_is_the_same_on_every_machine(capsys: pytest.CaptureFixture[str]) -> None:
    """The ids are written into docs/measured/real_model.md; Python's random.Random(0) is stable across versions."""
    from sayplan_core.envs.tasks import load_tasks

    chosen = [t.id for t in sample_per_family(load_tasks(), 5, 0)]
    assert len(chosen) == 20 and chosen[:2] == ["office-ss-07", "home-ss-02"]
    families = [t.family for t in load_tasks() if t.id in chosen]
    assert {f: families.count(f) for f in families} == dict.fromkeys(
        ["simple_search", "complex_search", "simple_planning", "long_horizon"], 5
    )


def test_per_family_is_checked_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "--per-family", "0", "--out", str(tmp_path / "out")]) == 2
    assert "--per-family must be 1 or more" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ failure classes, on real runs
def scored(answers: list[str], search: bool, **options: Any) -> dict[str, Any]:
    """Run SayPlan on the office with a replayed transcript; a row as the bench scores it (search or planning)."""
    budget = options.pop("budget", FAST)
    opts = PlannerOptions(budget=budget, **options)
    result = make_planner("sayplan", transcript(*answers), opts).plan(load_env("office"), INSTRUCTION)
    row: dict[str, Any] = {
        "planner": "sayplan",
        "family": "simple_search" if search else "simple_planning",
        "executable": result.verified,
        "failure": result.failure.label,
        "message": result.message,
        "calls": [call_row(c) for c in result.calls],
        "search_success": (result.answer == ["coffee_mug"]) if search else None,
        "correct": None if search else result.verified,
    }
    return row


def test_each_way_a_run_ends_has_its_class() -> None:
    ok = scored([say("expand", "kitchen"), say("plan", plan=GOOD_PLAN, answer=["coffee_mug"])], search=True)
    assert failure_class(ok) == ""
    wrong = scored([say("expand", "kitchen"), say("plan", plan=GOOD_PLAN, answer=["fridge"])], search=True)
    assert failure_class(wrong) == "bad search: wrong answer"
    rooms = ("kitchen", "cafeteria", "admin", "nikos_office")
    wandering = scored([say("expand", r) for r in rooms], search=True, max_search_steps=3, max_replans=0)
    assert failure_class(wandering) == "bad search: never planned"
    budget = Budget(max_calls=3, backoff_initial_s=0.0, backoff_max_s=0.0)
    stuck = scored([say("expand", "kitchen")] + [say("plan", plan=BAD_PLAN)] * 2, search=False, budget=budget)
    assert failure_class(stuck) == "unverifiable plan"
    exhausted = scored([say("plan", plan=BAD_PLAN)] * 3, search=False, max_replans=2)
    assert failure_class(exhausted) == "replans exhausted"
    down = scored([error("timeout")] * 5, search=False)
    assert failure_class(down) == "backend error"
    late = dict(down, message="LLM call deadline of 600 s passed after 1 attempt(s) (timeout); last feedback: ...")
    assert failure_class(late) == "deadline"
    raised = dict(ok, error="ValueError: broken graph")
    assert failure_class(raised) == "raised"
    rows = [ok, wrong, wandering, stuck, exhausted, down, late, raised]
    assert all(failure_class(r) in ("", *FAILURE_CLASSES) for r in rows)
    table = failure_table(rows)
    assert table[0].startswith("| planner | success | bad search: never planned | bad search: wrong answer |")
    assert table[2] == "| sayplan | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 |"


def test_the_summary_gives_speeds_where_the_backend_measured_them() -> None:
    measured = CallStats("search", "m", 1000, 50, 30.0, "ok", cached_tokens=600, prompt_s=20.0, decode_s=10.0)
    rows = [
        {
            "planner": "sayplan",
            "family": "simple_search",
            "search_success": True,
            "correct": None,
            "executable": True,
            "replanning_rounds": 0,
            "llm_calls": 1,
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            "elapsed_s": 31.0,
            "calls": [call_row(measured)],
        }
    ]
    (overall,) = [s for s in summarise(rows) if s["family"] == "all"]
    assert overall["read tok/s"] == "20" and overall["write tok/s"] == "5.0"  # (1000 - 600) / 20, 50 / 10
    assert json.loads(json.dumps(rows))  # rows stay plain JSON
    del rows[0]["calls"][0]["prompt_s"], rows[0]["calls"][0]["decode_s"]
    (overall,) = [s for s in summarise(rows) if s["family"] == "all"]
    assert "read tok/s" not in overall  # a server that measures nothing adds no columns


def test_the_real_model_script_names_its_tasks_and_writes_what_has_run(tmp_path: Path) -> None:
    """scripts/bench_real_model.py: the task ids come from the same draw, and `write` works on whatever results
    exist (none, some, all), with the pinned hashes of the packs it names."""
    from bench_runs import run_bench

    from sayplan_core.envs.tasks import load_tasks
    from sayplan_core.llm.model_packs import PACKS

    tasks = json.loads(run_bench("bench_real_model.py", ["tasks"]))
    assert tasks["main"] == [t.id for t in sample_per_family(load_tasks(), 5, 0)]
    assert set(tasks["subset"]) <= set(tasks["main"]) and len(tasks["subset"]) == 4
    run_bench("bench_real_model.py", ["write", str(tmp_path / "real_model.md")])
    text = (tmp_path / "real_model.md").read_text(encoding="utf-8")
    assert text.startswith("# A real model plans: success rates on this machine\n\nWritten by `scripts/ws_env.sh")
    for name in ("qwen-1.5b", "qwen-0.5b", "gemma-270m"):
        assert f"SHA-256 `{PACKS[name].sha256}`" in text
    assert "| configuration | runs | success |" in text
