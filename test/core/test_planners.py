"""The SayPlan planner family driven by replayed transcripts: the full loop and every bad-answer case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from transcripts import (
    BAD_PLAN,
    FAST,
    GOAL,
    GOOD_PLAN,
    INSTRUCTION,
    error,
    lite_plan,
    lite_search,
    say,
    transcript,
    write_transcript,
)

from sayplan_core.cli import main as cli_main
from sayplan_core.envs import load_env
from sayplan_core.llm.replay import RecordingBackend, ReplayBackend
from sayplan_core.llm.session import Budget
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PlannerOptions, Progress, make_planner
from sayplan_core.sim import check_goals, verify_plan


def run(planner: str, backend: Any, **options: Any) -> Any:
    events: list[Progress] = []
    opts = PlannerOptions(budget=options.pop("budget", FAST), **options)
    result = make_planner(planner, backend, opts).plan(load_env("office"), INSTRUCTION, on_progress=events.append)
    assert result.progress == events  # the result keeps every step the callback saw, in order
    return result


def assert_goal_met(result: Any) -> None:
    final = verify_plan(load_env("office"), result.full_plan, strict_navigation=True).final_graph()
    assert check_goals(final, [GOAL]).success


# ------------------------------------------------------------------ the full SayPlan loop
def test_sayplan_search_plan_fail_replan_success() -> None:
    backend = transcript(
        say("expand", "kitchen"),
        say("expand", "jasons_office"),
        say("contract", "jasons_office"),
        say("expand", "nikos_office"),
        say("plan", plan=BAD_PLAN),
        say("plan", plan=GOOD_PLAN, answer=["coffee_mug"]),
    )
    result = run("sayplan", backend)
    assert result.success and result.verified and result.failure is PlanCode.NONE
    assert result.explored_nodes == ["kitchen", "jasons_office", "nikos_office"]
    assert result.replanning_rounds == 1
    assert result.feedback_history == ["cannot pickup(coffee_mug): it is inside kitchen_cupboard, which is closed"]
    assert [c.stage for c in result.calls] == ["search"] * 4 + ["plan", "replan"]
    assert str(result.full_plan[0]) == "goto(pose8)" and len(result.full_plan) == 22
    assert result.answer == ["coffee_mug"]
    assert result.prompt_tokens == 6000 and result.completion_tokens == 300
    assert [e.stage for e in result.progress].count("verify") == 2 and result.progress[-1].stage == "done"
    assert "fridge" in result.observed_nodes and backend.exhausted
    assert_goal_met(result)


def test_recorded_run_replays_deterministically(tmp_path: Path) -> None:
    answers = (say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN))
    recorder = RecordingBackend(transcript(*answers))
    first = run("sayplan", recorder)
    path = tmp_path / "run.json"
    recorder.save(path)
    saved = json.loads(path.read_text())
    assert len(saved["calls"]) == 3 and saved["calls"][0]["messages"][0]["role"] == "system"
    second = run("sayplan", ReplayBackend.from_file(path, check_messages=True))
    assert second.to_dict() | {"elapsed_s": 0, "calls": []} == first.to_dict() | {"elapsed_s": 0, "calls": []}


def test_sayplan_lite_two_dialogues() -> None:
    backend = transcript(
        lite_search("expand", "kitchen"),
        lite_search("expand", "nikos_office"),
        lite_search("done"),
        lite_plan(BAD_PLAN),
        lite_plan(GOOD_PLAN),
    )
    result = run("sayplan_lite", backend)
    assert result.success and result.replanning_rounds == 1
    assert [c.stage for c in result.calls] == ["search", "search", "search", "plan", "replan"]
    assert_goal_met(result)


def test_llm_p_does_not_replan() -> None:
    result = run("llm_p", transcript(say("expand", "kitchen"), say("plan", plan=BAD_PLAN)))
    assert not result.success and result.failure is PlanCode.REPLANS_EXHAUSTED and result.replanning_rounds == 0
    assert "inside kitchen_cupboard, which is closed" in result.message


def test_llm_as_planner_open_loop() -> None:
    graph = load_env("office")
    from sayplan_core.nav import PathPlanner
    from sayplan_core.sim import parse_plan

    full = PathPlanner(graph).expand_plan(parse_plan(" > ".join(f"{a}({t})" for a, t in GOOD_PLAN)))
    good = lite_plan([(s.action, s.target) for s in full])
    result = run("llm_as_planner", transcript(good))
    assert result.success and result.full_plan == full
    jumpy = run("llm_as_planner", transcript(lite_plan(GOOD_PLAN)))
    assert not jumpy.success and jumpy.failure is PlanCode.NOT_EXECUTABLE
    assert "kitchen is not adjacent to the agent's location pose7" in jumpy.message


def test_replanning_stops_after_the_limit() -> None:
    result = run("sayplan", transcript(*[say("plan", plan=BAD_PLAN)] * 3), max_replans=2)
    assert not result.success and result.failure is PlanCode.REPLANS_EXHAUSTED and result.replanning_rounds == 2
    assert len(result.feedback_history) == 3
    assert result.message.startswith("no verified plan after 2 replanning round(s); last feedback: cannot pickup")


# ------------------------------------------------------------------ bad answers
@pytest.mark.parametrize(
    ("bad", "feedback"),
    [
        ("Sure! I will expand the kitchen first.", "the answer is not valid JSON"),
        (json.dumps({"thought": "x", "cmd": "expand"}), "the answer has no 'command' field"),
        (say("expand", "kichen"), "expand: node 'kichen' does not exist; did you mean 'kitchen'?"),
        (say("plan", plan=[("teleport", "kitchen")]), "plan step 0 uses unknown action 'teleport'"),
        (say("plan", plan=[]), "the plan is empty"),
        (say("fly", "kitchen"), "unknown command 'fly'"),
        (
            json.dumps({"command": {"command_name": "plan", "plan": [{"action": "goto", "target": "narnia"}]}}),
            "node 'narnia' does not exist",
        ),
    ],
)
def test_bad_answers_are_fed_back(bad: str, feedback: str) -> None:
    backend = transcript(bad, say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN))
    recorder = RecordingBackend(backend)
    result = run("sayplan", recorder)
    assert result.success, result.message
    assert result.calls[0].outcome == "bad_answer" and feedback in result.calls[0].detail
    retry_messages = recorder.calls[1]["messages"]
    assert retry_messages[-2] == {"role": "assistant", "content": bad}
    assert feedback in retry_messages[-1]["content"]


def test_refusal_is_fed_back() -> None:
    refusal = {"response": {"text": "", "refusal": "I cannot help with robots."}}
    result = run(
        "sayplan",
        transcript(refusal, say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)),
    )
    assert result.success and result.calls[0].detail == "the model refused: I cannot help with robots."


@pytest.mark.parametrize("kind", ["timeout", "http_429", "http_503", "connection"])
def test_transport_errors_are_retried(kind: str) -> None:
    result = run(
        "sayplan",
        transcript(error(kind), say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)),
    )
    assert result.success
    assert result.calls[0].outcome == "transient_error" and kind in result.calls[0].detail


def test_too_many_bad_answers_in_one_step() -> None:
    budget = Budget(max_bad_answers_per_step=2, backoff_initial_s=0.0)
    result = run("sayplan", transcript("nope", "still nope", "no"), budget=budget)
    assert not result.success and result.failure is PlanCode.BUDGET_EXHAUSTED
    assert result.message.startswith(
        "no usable answer after 3 tries at the search step; last feedback: the answer is not valid JSON"
    )


def test_call_budget_ends_the_task_with_the_last_feedback() -> None:
    budget = Budget(max_calls=3, backoff_initial_s=0.0)
    endless = transcript(
        say("expand", "kitchen"), say("contract", "kitchen"), say("expand", "kitchen"), say("contract", "kitchen")
    )
    result = run("sayplan", endless, budget=budget)
    assert not result.success and result.failure is PlanCode.BUDGET_EXHAUSTED and len(result.calls) == 3
    assert result.message == "call budget exhausted (3 LLM calls)"


def test_token_budget() -> None:
    budget = Budget(max_tokens=2000, backoff_initial_s=0.0)
    result = run("sayplan", transcript(*[say("expand", "kitchen"), say("contract", "kitchen")] * 3), budget=budget)
    assert not result.success and result.message.startswith("token budget exhausted (2100 of 2000 tokens)")


def test_backend_down_fails_with_a_clear_message() -> None:
    result = run("sayplan", transcript(*[error("connection")] * 5))
    assert not result.success and result.failure is PlanCode.BACKEND_ERROR
    assert result.message.startswith("LLM backend kept failing (connection) after 5 attempts")


def test_cancel_between_calls() -> None:
    backend = transcript(say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN))
    planner = make_planner("sayplan", backend, PlannerOptions(budget=FAST))
    calls: list[int] = []

    def should_cancel() -> bool:
        calls.append(1)
        return len(calls) > 1

    result = planner.plan(load_env("office"), INSTRUCTION, should_cancel=should_cancel)
    assert result.canceled and result.failure is PlanCode.CANCELED and len(result.calls) == 1


def test_schema_enums_list_only_visible_nodes() -> None:
    recorder = RecordingBackend(
        transcript(say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN))
    )
    seen: list[dict[str, Any]] = []
    inner = recorder.complete

    def spy(request: Any) -> Any:
        seen.append(request.schema)
        return inner(request)

    recorder.complete = spy  # type: ignore[method-assign]
    run("sayplan", recorder)

    def plan_item(schema: dict[str, Any], field: str) -> list[str]:
        command = schema["properties"]["command"]
        for variant in command.get("anyOf", [command]):  # one variant per command with legal_commands
            if "plan" in variant["properties"]["command_name"]["enum"]:
                return list(variant["properties"]["plan"]["items"]["properties"][field]["enum"])
        raise AssertionError("no variant of the command takes a plan")

    first, last = seen[0], seen[-1]
    targets = plan_item(first, "target")
    assert "kitchen" in targets and "coffee_mug" not in targets
    actions = plan_item(first, "action")
    assert sorted(actions) == sorted(
        ["goto", "access", "pickup", "release", "open", "close", "turn_on", "turn_off", "done"]
    )
    late_targets = plan_item(last, "target")
    assert "coffee_mug" in late_targets and "nikos_desk" in late_targets


# ------------------------------------------------------------------ CLI
def test_cli_plan_with_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = write_transcript(
        tmp_path / "t.json",
        say("expand", "kitchen"),
        say("expand", "nikos_office"),
        say("plan", plan=BAD_PLAN),
        say("plan", plan=GOOD_PLAN),
    )
    code = cli_main(
        [
            "plan",
            "--env",
            "office",
            "--instruction",
            INSTRUCTION,
            "--replay",
            str(t),
            "--record",
            str(tmp_path / "r.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "[ search] kitchen round 0" in out and "[ verify] round 0" in out and "which is closed" in out
    assert "sayplan: verified after 1 replanning round(s): goto(pose8)" in out
    assert "4 LLM calls, 3600 prompt + 160 completion tokens" in out
    assert len(json.loads((tmp_path / "r.json").read_text())["calls"]) == 4
    code = cli_main(["--json", "plan", "--env", "office", "--instruction", INSTRUCTION, "--replay", str(t)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verified"] and data["replanning_rounds"] == 1


def test_cli_plan_unreachable_llm(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [
        "plan",
        "--env",
        "office",
        "--instruction",
        "x",
        "--llm",
        "ollama",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--retries",
        "0",
    ]
    code = cli_main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("sayplan: error: LLM backend kept failing (connection) after 1 attempts")
    )


def test_cli_demo_with_a_live_planner_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = write_transcript(
        tmp_path / "t.json",
        say("expand", "kitchen"),
        say("expand", "nikos_office"),
        say("plan", plan=BAD_PLAN),
        say("plan", plan=GOOD_PLAN),
    )
    assert cli_main(["demo", "--replay", str(t)]) == 0
    out = capsys.readouterr().out
    assert "[  verify] round 0" in out and "which is closed" in out
    assert "summary: task office-lh-05 | replanning rounds 1 | 22 steps | goal met | 4 LLM calls" in out


def test_cli_llm_which(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAYPLAN_WHICH_KEY", "sk-x")
    assert cli_main(["--json", "llm", "which", "--api-key-env", "SAYPLAN_WHICH_KEY"]) == 0
    assert json.loads(capsys.readouterr().out) == {"backend": "openai", "reason": "SAYPLAN_WHICH_KEY is set"}


# ------------------------------------------------------------------ LookPlanGraph
def move(name: str, target: str = "") -> str:
    return json.dumps({"chain_of_thought": "...", "next_move": {"function_name": name, "function_target": target}})


def test_lookplangraph_looks_acts_and_recovers() -> None:
    backend = RecordingBackend(
        transcript(
            move("go_to", "kitchen"),
            move("look_inside", "kitchen_cupboard"),  # closed: infeasible, fed back
            move("open", "kitchen_cupboard"),
            move("look_inside", "kitchen_cupboard"),  # reveals the mug (and the glass)
            move("pick_up", "coffee_mug"),
            move("go_to", "nikos_office"),
            move("put_on", "nikos_desk"),
            move("done"),
        )
    )
    result = run("lookplangraph", backend)
    assert result.success and result.action_set == "lookplangraph"
    assert [str(s) for s in result.plan] == [
        "go_to(kitchen)", "open(kitchen_cupboard)", "look_inside(kitchen_cupboard)", "pick_up(coffee_mug)",
        "go_to(nikos_office)", "put_on(nikos_desk)", "done",
    ]  # fmt: skip
    assert result.feedback_history == [
        "cannot look_inside(kitchen_cupboard): kitchen_cupboard is closed; open(kitchen_cupboard) first"
    ]
    assert result.explored_nodes == ["clean_glass", "coffee_mug"]
    first_prompt = backend.calls[0]["messages"][1]["content"]
    assert (
        "coffee_mug" not in first_prompt and "kitchen_cupboard" not in first_prompt
    )  # objects unknown, robot elsewhere
    assert "kitchen_cupboard" in backend.calls[1]["messages"][1]["content"]  # in the kitchen now: its assets show
    final = verify_plan(load_env("office"), result.full_plan, "lookplangraph").final_graph()
    assert check_goals(final, [GOAL]).success
    from sayplan_core.bench.runner import score_run
    from sayplan_core.envs.tasks import load_tasks

    task = next(t for t in load_tasks() if t.id == "office-lh-05")
    row = score_run(load_env("office"), task, result)
    assert row["executable"] and row["correct"] and row["plan_length"] == 7


def test_lookplangraph_cannot_use_what_it_has_not_seen() -> None:
    # an object it has not looked for yet is not in the memory graph: the answer is refused and fed back
    result = run("lookplangraph", transcript(move("go_to", "kitchen"), *[move("pick_up", "coffee_mug")] * 4))
    assert not result.success and result.failure is PlanCode.BUDGET_EXHAUSTED
    assert result.message.startswith("no usable answer after 4 tries at the plan step; last feedback: ")
    assert "node 'coffee_mug' does not exist" in result.message


def test_lookplangraph_gives_up_after_five_infeasible_moves() -> None:
    result = run("lookplangraph", transcript(move("go_to", "kitchen"), *[move("look_inside", "kitchen_cupboard")] * 6))
    assert not result.success and result.failure is PlanCode.REPLANS_EXHAUSTED and result.replanning_rounds == 6
    assert result.message == (
        "no feasible move after 5 retries; last feedback: "
        "cannot look_inside(kitchen_cupboard): kitchen_cupboard is closed; open(kitchen_cupboard) first"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--top-k", "0"], "--top-k must be >= 1, got 0"),
        (["--step-threshold", "2"], "--step-threshold must be <= 1, got 2.0"),
        (["--embedder", "word2vec"], "--embedder must be one of local, openai:<model>, ollama:<model>, got 'word2vec'"),
        (["--candidate-plans", "0"], "--candidate-plans must be >= 1, got 0"),
        (["--timeout", "-1"], "--timeout must be >= 0, got -1.0"),
    ],
)
def test_cli_rejects_bad_planner_options(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--env", "office", "--instruction", "x", "--planner", "embodiedrag", "--replay", "/nonexistent"]
    assert cli_main(args + flags) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("planner", "action_set"), [("lookplangraph", "sayplan"), ("sayplan", "lookplangraph")])
def test_a_planner_refuses_an_action_set_it_cannot_write(planner: str, action_set: str) -> None:
    backend = transcript()  # no LLM call may happen
    result = make_planner(planner, backend, PlannerOptions(action_set=action_set)).plan(load_env("office"), INSTRUCTION)
    assert not result.success and result.failure is PlanCode.UNSUPPORTED_ACTION_SET
    assert result.action_set == action_set and f"not '{action_set}'" in result.message and not result.calls
