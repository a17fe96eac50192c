"""`sayplan bench` on replayed transcripts: scoring, resume after interruption, report files."""

from __future__ import annotations

import contextlib
import csv
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from transcripts import BAD_PLAN, GOOD_PLAN, lite_plan, lite_search, say, write_transcript

from sayplan_core.bench.runner import BenchConfig, run_bench
from sayplan_core.cli import main as cli_main
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.folder_lock import FolderInUseError
from sayplan_core.llm.types import LlmBackend
from sayplan_core.planners import PlannerOptions


def make_transcripts(folder: Path) -> None:
    folder.mkdir()
    write_transcript(
        folder / "sayplan__office-lh-05.json",
        say("expand", "kitchen"),
        say("expand", "nikos_office"),
        say("plan", plan=BAD_PLAN),
        say("plan", plan=GOOD_PLAN),
    )
    write_transcript(folder / "llm_p__office-lh-05.json", say("expand", "kitchen"), say("plan", plan=BAD_PLAN))
    write_transcript(
        folder / "sayplan__office-ss-02.json",
        say("expand", "kitchen"),
        say("plan", plan=[("done", "")], answer=["carrot"]),
    )
    write_transcript(
        folder / "llm_p__office-ss-02.json",
        say("expand", "cafeteria"),
        say("plan", plan=[("done", "")], answer=["kale2"]),
    )
    write_transcript(
        folder / "sayplan_lite__office-ss-02.json",
        lite_search("expand", "kitchen"),
        lite_search("done"),
        lite_plan([("done", "")], ["carrot"]),
    )


def test_bench_scores_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    args = [
        "bench",
        "--ids",
        "office-lh-05,office-ss-02",
        "--planners",
        "sayplan,llm_p",
        "--replay-dir",
        str(replay),
        "--out",
        str(out),
    ]
    assert cli_main(args) == 0
    text = capsys.readouterr().out
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_key = {(r["planner"], r["task"]): r for r in rows}
    coffee = by_key[("sayplan", "office-lh-05")]
    assert coffee["executable"] and coffee["correct"] and coffee["replanning_rounds"] == 1
    assert coffee["precision"] == pytest.approx(0.5) and coffee["nrr"] > 1
    assert (
        by_key[("llm_p", "office-lh-05")]["executable"] is False
        and by_key[("llm_p", "office-lh-05")]["correct"] is False
    )
    assert by_key[("sayplan", "office-ss-02")]["search_success"] is True
    assert by_key[("llm_p", "office-ss-02")]["search_success"] is False
    report = (out / "report.md").read_text()
    assert "| sayplan | long_horizon | 1 | 0 | - | 100.0% | 100.0% | 0.50 |" in report
    assert "| llm_p | simple_search | 1 | 0 | 0.0% |" in report
    with (out / "results.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 4
    for png in ("tokens_per_call.png", "cumulative_tokens.png", "time_per_call.png"):
        assert (out / png).stat().st_size > 1000
    assert "wrote" in text and "# Bench report" in text


def test_bench_resumes_after_interruption(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    base = ["bench", "--ids", "office-ss-02", "--replay-dir", str(replay), "--out", str(out)]
    assert cli_main([*base, "--planners", "sayplan"]) == 0
    with (out / "results.jsonl").open("a") as fh:
        fh.write('{"planner": "sayplan_lite", "task": "office-ss')  # a run killed mid-write
    assert cli_main([*base, "--planners", "sayplan,sayplan_lite"]) == 0
    text = capsys.readouterr().out
    assert "dropped 1 unfinished result line(s)" in text
    assert "sayplan office-ss-02: done earlier, skipped" in text
    assert "sayplan_lite office-ss-02: verified" in text
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["planner"], r["search_success"]) for r in rows] == [("sayplan", True), ("sayplan_lite", True)]


def test_bench_rejects_unknown_planner_and_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "--planners", "sayplan,magic"]) == 2
    assert "unknown planner(s) magic" in capsys.readouterr().err
    assert cli_main(["bench", "--ids", "office-xx-99"]) == 2
    assert "unknown task id(s): office-xx-99" in capsys.readouterr().err


def test_every_planner_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sayplan_core.envs import load_env
    from sayplan_core.nav import PathPlanner
    from sayplan_core.planners import PLANNERS
    from sayplan_core.sim import parse_plan

    def dumps(**body: object) -> str:
        return json.dumps(body)

    full = PathPlanner(load_env("office")).expand_plan(parse_plan(" > ".join(f"{a}({t})" for a, t in GOOD_PLAN)))
    lpg = [("go_to", "kitchen"), ("open", "kitchen_cupboard"), ("look_inside", "kitchen_cupboard"),
           ("pick_up", "coffee_mug"), ("go_to", "nikos_office"), ("put_on", "nikos_desk"), ("done", "")]  # fmt: skip
    entities = dumps(entities=[{"name": n, "attributes": ["states"]} for n in ("coffee mug", "Niko's desk")])
    react = [dumps(thought="...", action={"name": a, "target": t}) for a, t in GOOD_PLAN]
    answers: dict[str, list[str]] = {
        "sayplan": [say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)],
        "llm_p": [say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)],
        "sayplan_lite": [lite_search("expand", "kitchen"), lite_search("done"), lite_plan(GOOD_PLAN)],
        "llm_as_planner": [lite_plan([(s.action, s.target) for s in full])],
        "lookplangraph": [
            dumps(chain_of_thought="", next_move={"function_name": a, "function_target": t}) for a, t in lpg
        ],
        "embodiedrag_strict": [entities, *react],
        "embodiedrag": [entities, *[x for r in react for x in (r, dumps(entities=[]))]],
        "abstract": [
            dumps(
                plans=[
                    {
                        "steps": [
                            {
                                "sentence": "put the mug on Niko's desk",
                                "object": "coffee_mug",
                                "workspace": "nikos_desk",
                            }
                        ]
                    }
                ]
            )
        ],
        "ltl": [
            dumps(mapping=[{"phrase": "the mug", "node": "coffee_mug"}, {"phrase": "his desk", "node": "nikos_desk"}]),
            dumps(formula="F & coffee_mug F nikos_desk"),
        ],
    }
    assert set(answers) == set(PLANNERS)
    replay = tmp_path / "transcripts"
    replay.mkdir()
    for planner, calls in answers.items():
        write_transcript(replay / f"{planner}__office-lh-05.json", *calls)
    out = tmp_path / "bench"
    planners = ",".join(sorted(PLANNERS))
    args = ["bench", "--ids", "office-lh-05", "--planners", planners, "--replay-dir", str(replay), "--out", str(out)]
    assert cli_main(args) == 0
    rows = {r["planner"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(rows) == set(PLANNERS)
    assert all(r["executable"] for r in rows.values()), {p: r["message"] for p, r in rows.items()}
    # the ltl planner only navigates: its path is optimal and verified, but it moves no mug
    assert {p for p, r in rows.items() if r["correct"]} == set(PLANNERS) - {"ltl"}
    report = (out / "report.md").read_text()
    assert all(f"| {p} |" in report for p in PLANNERS)
    capsys.readouterr()


# ------------------------------------------------------------------ issue 13 / 11: a bench that survives bad input
def bench_args(replay: Path, out: Path, ids: str, planners: str) -> list[str]:
    return ["bench", "--ids", ids, "--planners", planners, "--replay-dir", str(replay), "--out", str(out)]


def test_a_run_that_raises_becomes_an_error_row_and_the_bench_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    (replay / "llm_p__office-lh-05.json").unlink()  # this run cannot even start
    out = tmp_path / "bench"
    code = cli_main(bench_args(replay, out, "office-lh-05,office-ss-02", "sayplan,llm_p"))
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert "1 run(s) raised" in captured.err
    rows = {(r["planner"], r["task"]): r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert len(rows) == 4
    broken = rows[("llm_p", "office-lh-05")]
    assert broken["error"].startswith("LlmFatalError: cannot read transcript") and broken["correct"] is False
    assert rows[("sayplan", "office-lh-05")]["correct"] and "error" not in rows[("llm_p", "office-ss-02")]
    report = (out / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| planner"))
    assert "| errors |" in header
    assert "| llm_p | all | 2 | 1 |" in report and "| sayplan | all | 2 | 0 |" in report
    assert "## Runs that raised" in report and "llm_p office-lh-05: LlmFatalError" in report


def test_resume_runs_again_the_runs_that_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A resume after the cause of an error is fixed reruns that run in place of its error row; --fresh is not needed."""
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    transcript = replay / "llm_p__office-lh-05.json"
    kept = transcript.read_text()
    transcript.unlink()
    out = tmp_path / "bench"
    args = bench_args(replay, out, "office-lh-05,office-ss-02", "sayplan,llm_p")
    assert cli_main(args) == 3
    before = (out / "results.jsonl").read_text().splitlines()
    where = next(i for i, line in enumerate(before) if json.loads(line).get("error"))
    transcript.write_text(kept)  # the cause is fixed
    capsys.readouterr()
    assert cli_main(args) == 0
    text = capsys.readouterr().out
    assert "llm_p office-lh-05: raised earlier (LlmFatalError: cannot read transcript" in text
    assert "running it again" in text and "llm_p office-lh-05: failed" in text
    assert text.count("done earlier, skipped") == 3
    after = (out / "results.jsonl").read_text().splitlines()
    assert (
        len(after) == len(before)
        and [a for i, a in enumerate(after) if i != where] == before[:where] + before[where + 1 :]
    )
    rerun = json.loads(after[where])
    assert "error" not in rerun and (rerun["planner"], rerun["task"]) == ("llm_p", "office-lh-05")
    fresh = tmp_path / "fresh"  # the same run in a bench that never raised
    assert cli_main(bench_args(replay, fresh, "office-lh-05", "llm_p")) == 0
    [clean] = [json.loads(line) for line in (fresh / "results.jsonl").read_text().splitlines()]
    for key in ("executable", "correct", "failure", "plan", "llm_calls", "prompt_tokens", "precision"):
        assert rerun[key] == clean[key], key
    assert "## Runs that raised" not in (out / "report.md").read_text()
    capsys.readouterr()


def test_a_stepwise_run_ended_by_the_model_is_reported_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two refused moves and then done() were logged as "verified" with nothing in the row to tell them apart."""

    def move(name: str, target: str) -> str:
        return json.dumps({"chain_of_thought": "", "next_move": {"function_name": name, "function_target": target}})

    replay = tmp_path / "transcripts"
    replay.mkdir()
    write_transcript(
        replay / "lookplangraph__office-lh-05.json",
        move("go_to", "kitchen"),
        *[move("pick_up", "kitchen_bench")] * 2,  # an asset: refused each time
        move("done", ""),
    )
    out = tmp_path / "bench"
    capsys.readouterr()
    assert cli_main(bench_args(replay, out, "office-lh-05", "lookplangraph")) == 0
    text = capsys.readouterr().out
    assert (
        "lookplangraph office-lh-05: executed 1 action(s) step by step (2 infeasible proposal(s) refused), "
        "then the model ended the task, 4 calls" in text
    )
    [row] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["executed_actions"] == 1 and row["plan"] == ["go_to(kitchen)", "done"] and row["correct"] is False
    with (out / "results.csv").open() as fh:
        assert next(csv.DictReader(fh))["executed_actions"] == "1"


def test_a_task_whose_graph_is_broken_is_an_error_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    (tmp_path / "broken.json").write_text(
        '{"format": "sayplan-3dsg", "nodes": [{"id": "a", "type": "room"}], "edges": ['
    )
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(
        "tasks:\n"
        "  - {id: broken, env: broken.json, family: custom, instruction: x, note: no goal}\n"
        "  - {id: office-ss-02, env: office, family: simple_search, instruction: find the carrot,"
        " goal: {search: {any: [carrot]}}}\n"
    )
    out = tmp_path / "bench"
    args = ["bench", "--tasks", str(tasks), "--planners", "sayplan", "--replay-dir", str(replay), "--out", str(out)]
    assert cli_main(args) == 3
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows[0]["task"] == "broken" and "GraphError" in rows[0]["error"] and "not valid JSON" in rows[0]["error"]
    assert rows[1]["search_success"] is True
    assert "| sayplan | custom | 1 | 1 |" in (out / "report.md").read_text()
    capsys.readouterr()


def test_nothing_is_deleted_before_every_option_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    base = bench_args(replay, out, "office-ss-02", "sayplan")
    assert cli_main(base) == 0
    before = (out / "results.jsonl").read_text()
    bad_runs = [
        [*base, "--fresh", "--top-k", "0"],
        [*base[:-4], "--replay-dir", str(tmp_path / "missing"), "--out", str(out), "--fresh"],
        [*base, "--fresh", "--limit", "0"],
        [*base, "--fresh", "--limit", "-1"],
        [*base, "--fresh", "--tasks", str(tmp_path / "nope.yaml")],
    ]
    for args in bad_runs:
        assert cli_main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("sayplan: error: ") and err.count("\n") == 1, err
        assert (out / "results.jsonl").read_text() == before, args


def test_resume_with_other_settings_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    base = bench_args(replay, out, "office-ss-02", "sayplan,sayplan_lite")
    assert cli_main([*base[:-4], "--planners", "sayplan", *base[-4:]]) == 0
    before = (out / "results.jsonl").read_text()
    assert json.loads(before)["settings"]["max_calls"] == 40
    assert cli_main([*base, "--max-calls", "6"]) == 2
    err = capsys.readouterr().err
    assert "made with other settings (max_calls: 40 there, 6 now)" in err and "--fresh" in err
    assert (out / "results.jsonl").read_text() == before
    assert cli_main(base) == 0  # the same settings resume
    assert "sayplan office-ss-02: done earlier, skipped" in capsys.readouterr().out


def test_an_option_added_after_the_rows_were_written_resumes_off_and_is_refused_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows written before `sayplan.instruction_matches` existed do not name it; they ran as it off does.
    Once, an 18-task real-model run could not resume after the option was added."""
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    base = bench_args(replay, out, "office-ss-02", "sayplan")
    assert cli_main(base) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows[0]["settings"]["sayplan.instruction_matches"] is False
    for row in rows:  # as an older bench wrote them: the option did not exist
        del row["settings"]["sayplan.instruction_matches"]
    older = "".join(json.dumps(row) + "\n" for row in rows)
    (out / "results.jsonl").write_text(older)
    capsys.readouterr()
    assert cli_main([*base, "--instruction-matches", "true"]) == 2
    err = capsys.readouterr().err
    assert "made with other settings (sayplan.instruction_matches: False there, True now)" in err, err
    assert (out / "results.jsonl").read_text() == older
    assert cli_main(base) == 0  # at its default: the rows ran as it does
    assert "sayplan office-ss-02: done earlier, skipped" in capsys.readouterr().out


def test_rows_from_before_an_option_added_on_by_default_are_not_taken_as_run_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`lookplangraph.no_repeat` came on by default: rows written before it ran without the aid. Taking a missing
    option at today's default would have resumed them as runs with it, and one report would mix both."""
    replay = tmp_path / "transcripts"
    replay.mkdir()
    done = json.dumps({"chain_of_thought": "", "next_move": {"function_name": "done", "function_target": ""}})
    write_transcript(replay / "lookplangraph__office-sp-05.json", done)
    out = tmp_path / "bench"
    base = bench_args(replay, out, "office-sp-05", "lookplangraph")
    assert cli_main(base) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows[0]["settings"]["lookplangraph.no_repeat"] is True
    for row in rows:  # as the bench wrote them before the aid existed
        del row["settings"]["lookplangraph.no_repeat"]
    older = "".join(json.dumps(row) + "\n" for row in rows)
    (out / "results.jsonl").write_text(older)
    capsys.readouterr()
    assert cli_main(base) == 2  # at the default, on: not what the rows ran
    err = capsys.readouterr().err
    assert "made with other settings (lookplangraph.no_repeat: False there, True now)" in err, err
    assert (out / "results.jsonl").read_text() == older
    assert cli_main([*base, "--no-repeat", "false"]) == 0  # off: what they ran
    assert "done earlier, skipped" in capsys.readouterr().out


def test_a_resume_that_is_not_replayed_as_the_first_runs_were_or_has_another_llm_timeout_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once, runs answered from one --replay transcript were recorded as `llm: auto`: a resume against a live LLM
    (or with another --timeout, which decides which calls fail) was taken and one report mixed both."""
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    base = ["bench", "--ids", "office-ss-02", "--planners", "sayplan", "--out", str(out)]
    transcript = ["--replay", str(replay / "sayplan__office-ss-02.json")]
    assert cli_main([*base, *transcript]) == 0
    before = (out / "results.jsonl").read_text()
    assert json.loads(before)["settings"]["llm"] == "replay"
    live, other = ["--llm", "auto"], ["--replay", str(replay / "sayplan__office-lh-05.json")]
    for changed in (live, [*transcript, "--timeout", "5"], other):
        assert cli_main([*base, *changed]) == 2, changed
        err = capsys.readouterr().err
        assert "made with other settings" in err, (changed, err)
        assert (out / "results.jsonl").read_text() == before
    assert cli_main([*base, *transcript]) == 0  # the same settings resume
    assert "sayplan office-ss-02: done earlier, skipped" in capsys.readouterr().out


def test_goal_graph_tasks_from_a_grasif_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = Path(__file__).parent / "data" / "grasif_node_list_tasks.json"
    folder = tmp_path / "grasif"
    assert cli_main(["env", "import", str(data), str(folder)]) == 0

    def move(name: str, target: str) -> str:
        return json.dumps({"chain_of_thought": "", "next_move": {"function_name": name, "function_target": target}})

    replay = tmp_path / "transcripts"
    replay.mkdir()
    write_transcript(
        replay / "lookplangraph__refrigerate-milk.json",
        move("go_to", "kitchen-1"),
        move("look_on", "bench-1"),
        move("pick_up", "milk-1"),
        move("open", "fridge-1"),
        move("put_inside", "fridge-1"),
        move("done", ""),
    )
    write_transcript(replay / "lookplangraph__grasif_node_list_tasks-1.json", move("done", ""))
    out = tmp_path / "bench"
    args = ["bench", "--tasks", str(folder / "tasks.yaml"), "--planners", "lookplangraph"]
    assert cli_main([*args, "--replay-dir", str(replay), "--out", str(out)]) == 0
    rows = {r["task"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows["refrigerate-milk"]["correct"] is True
    assert rows["grasif_node_list_tasks-1"]["correct"] is False  # the kettle was never switched on
    assert "| lookplangraph | grasif | 2 | 0 |" in (out / "report.md").read_text()
    capsys.readouterr()


def test_a_goal_graph_that_cannot_be_read_fails_the_run_before_the_llm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The goal graph is read before the planner runs: no transcript is asked for (an LLM would not be paid)."""
    data = Path(__file__).parent / "data" / "grasif_node_list_tasks.json"
    folder = tmp_path / "grasif"
    assert cli_main(["env", "import", str(data), str(folder)]) == 0
    tasks = load_tasks(folder / "tasks.yaml")
    (folder / "refrigerate-milk.goal.json").write_text("{")  # broken after the task file was read
    replay = tmp_path / "transcripts"
    replay.mkdir()  # empty: a run that reached the LLM would fail on the missing transcript instead
    config = BenchConfig(["lookplangraph"], tmp_path / "bench", PlannerOptions(), replay_dir=replay)

    def no_llm() -> LlmBackend:
        raise AssertionError("the run asked for an LLM")

    rows = run_bench([t for t in tasks if t.id == "refrigerate-milk"], config, no_llm, log=str)
    assert len(rows) == 1 and rows[0]["error"].startswith("GraphError: "), rows[0]["error"]
    assert "refrigerate-milk.goal.json" in rows[0]["error"] and "transcript" not in rows[0]["error"]
    capsys.readouterr()


@contextlib.contextmanager
def held_by_another_process(folder: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds `folder` (as a running bench does) until the block ends, then is killed with -9."""
    code = (
        "import sys, time; from pathlib import Path; from sayplan_core.folder_lock import folder_lock\n"
        "with folder_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.send_signal(signal.SIGKILL)  # no clean-up: the kernel must release the lock
        holder.wait(timeout=10)


def test_a_second_bench_on_the_same_out_is_refused_until_the_first_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 9: two benches on one --out both exited 0 and every run was counted twice. While another
    process holds the folder this bench is refused with exit 2, naming it, and results.jsonl is not touched; once
    that process is killed the same bench runs."""
    replay = tmp_path / "transcripts"
    make_transcripts(replay)
    out = tmp_path / "bench"
    args = ["bench", "--ids", "office-ss-02", "--planners", "sayplan", "--replay-dir", str(replay), "--out", str(out)]
    with held_by_another_process(out) as holder:
        assert cli_main(args) == 2
        err = capsys.readouterr().err
        assert f"is in use by process {holder.pid}" in err and str(out.resolve()) in err
        assert not (out / "results.jsonl").exists()
    assert cli_main(args) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 1


def test_run_bench_takes_the_lock_too(tmp_path: Path) -> None:
    """The library entry point is guarded as the CLI is."""
    out = tmp_path / "bench"
    with held_by_another_process(out):
        config = BenchConfig(planners=["sayplan"], out_dir=out, options=PlannerOptions())
        with pytest.raises(FolderInUseError, match="in use by process"):
            run_bench(load_tasks()[:1], config, lambda: None)  # type: ignore[arg-type,return-value]


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    """A planted `<out>/.lock -> somefile` must not have that file truncated and overwritten with a pid."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious data")
    out = tmp_path / "bench"
    out.mkdir()
    (out / ".lock").symlink_to(victim)
    config = BenchConfig(planners=["sayplan"], out_dir=out, options=PlannerOptions())
    with pytest.raises(FolderInUseError, match="cannot open its lock file"):
        run_bench(load_tasks()[:1], config, lambda: None)  # type: ignore[arg-type,return-value]
    assert victim.read_text() == "precious data"
