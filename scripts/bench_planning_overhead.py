"""Planning overhead: what planning costs besides the LLM, on generated buildings of 10, 100 and 1,000 rooms.

    scripts/ws_env.sh python scripts/bench_planning_overhead.py [--latency 1.0] [--sizes 10 100 1000] \
        [--repeats 3] [--write docs/measured/planning_overhead.md]

Every bundled planner plans one task per building through the project's real LLM client (`OpenAIBackend`, the
SDK over HTTP) against a scripted OpenAI-compatible server on 127.0.0.1 in a child process. The server answers
each request with the next scripted answer exactly `--latency` seconds after the request arrived and reports the
prompt's tokens (cl100k) as a real server would, so the planner process does only its own work: building prompts
and schemas, collapse/expand, parsing and validating answers, path planning, simulator verification, replans.
Non-LLM time is the wall time of the run minus `latency x calls`; its share of wall time is the figure (goal < 1%
at 1 s per call).

Each planner plans as in a planner node, on a snapshot of a live graph (graph/snapshots.py, what the planner's
graph follower hands it) in two tables: the first plan on a freshly loaded graph (cold: nothing derived from the
graph is kept yet), and later plans on the same live graph after a skill moved one object (warm: the prompt
text kept per node redoes only what the update touched, graph/text.py). Both are reported; the cold one is what a
one-off plan costs. The scripted answers are the ones a perfect model would give: they are derived from the
building (the task's rooms and nodes), never from the planner's prompts.

The second table: tokens of the full graph, of SayPlan's room-level collapse (every room) and of its floor-level
collapse (floors only, expanded on demand), and the cut, by the real tokenizer.

`--profile PATH` runs cProfile (CPU time) over the planner runs only (not the server, not the token table, which
it skips), writes the stats to PATH (read them with `python -m pstats PATH`) and prints the top functions by own time;
combine it with `--planners` and `--sizes` to profile one planner on one building.

`--record-floor-transcript PATH` records the SayPlan run on the 1,000-room building (prompts included) to the
transcript that test/core/test_sayplan_floors.py replays; with `--record-planner sayplan_lite`, SayPlan Lite's run
(test/core/test_sayplan_lite_floors.py).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import json
import multiprocessing
import pstats
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import measured_doc

from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import count_tokens
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.graph.views import collapse, floors_first
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.replay import TRANSCRIPT_FORMAT, RecordingBackend, ReplayBackend
from sayplan_core.llm.session import Budget
from sayplan_core.llm.types import LlmBackend
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.planners import PLANNERS, PlannerOptions, PlanResult, make_planner
from sayplan_core.planners.sayplan import SayPlanOptions
from sayplan_core.sim.plan import PlanStep

#: Room count -> building: one floor of 10, two of 50, ten of 100 (the generator's corridors and stairs).
BUILDINGS = {10: (1, 10), 100: (2, 50), 1000: (10, 100)}


def building(rooms: int) -> SceneGraph:
    floors, per_floor = BUILDINGS.get(rooms) or (max(1, rooms // 100), rooms // max(1, rooms // 100))
    return generate_building(BuildingSpec(floors=floors, rooms_per_floor=per_floor, seed=0))


# ----------------------------------------------------------------------------- the task and a perfect model's answers
@dataclass(frozen=True)
class Task:
    """Carry an object from an open asset on the top floor to an open asset on the ground floor."""

    obj: str
    source_asset: str
    source_room: str
    target_asset: str
    target_room: str

    @property
    def instruction(self) -> str:
        return (
            f"Take the {self.obj} from the {self.source_asset} in {self.source_room} and put it on the "
            f"{self.target_asset} in {self.target_room}."
        )

    @property
    def ltl_instruction(self) -> str:
        return f"Go to {self.source_room}, then to {self.target_room}."

    @property
    def abstract_instruction(self) -> str:
        return f"Move the {self.obj} to the {self.target_asset}."

    def sayplan_steps(self) -> list[tuple[str, str]]:
        return [
            ("goto", self.source_room), ("access", self.source_asset), ("pickup", self.obj),
            ("goto", self.target_room), ("access", self.target_asset), ("release", self.obj), ("done", ""),
        ]  # fmt: skip

    def lookplangraph_steps(self) -> list[tuple[str, str]]:
        return [
            ("go_to", self.source_room), ("look_on", self.source_asset), ("pick_up", self.obj),
            ("go_to", self.target_room), ("put_on", self.target_asset), ("done", ""),
        ]  # fmt: skip


def open_asset_with_object(graph: SceneGraph, floor: str, last: bool) -> tuple[str, str, str]:
    """(room, asset, object) of the first (or last) room on `floor` with an open asset holding an object."""
    rooms = [r for r in graph.children(floor) if graph.nodes[r].type == "room"]
    for room in reversed(rooms) if last else rooms:
        for asset in graph.children(room):
            if "closed" not in graph.nodes[asset].states and graph.children(asset):
                return room, asset, graph.children(asset)[0]
    raise ValueError(f"no open asset with an object on {floor}")


def task_for(graph: SceneGraph) -> Task:
    floors = sorted(graph.ids_of_type("floor"))
    room_a, asset_a, obj = open_asset_with_object(graph, floors[-1], last=True)
    room_b, asset_b, _ = open_asset_with_object(graph, floors[0], last=False)
    return Task(obj, asset_a, room_a, asset_b, room_b)


def small_update(graph: SceneGraph, task: Task, version: int) -> GraphUpdate:
    """A skill's update that the task does not read: an object in a room the task does not visit moves between two
    open assets of its room (back and forth with the version)."""
    busy = {task.source_room, task.target_room}
    for room in sorted(graph.ids_of_type("room")):
        assets = [a for a in graph.children(room) if graph.nodes[a].type == "asset"]
        assets = [a for a in assets if "closed" not in graph.nodes[a].states]
        carriers = [a for a in assets if any(graph.nodes[c].type == "object" for c in graph.children(a))]
        if room in busy or len(assets) < 2 or not carriers:
            continue
        obj = next(c for c in graph.children(carriers[0]) if graph.nodes[c].type == "object")
        there = next(a for a in assets if a != graph.parent(obj))
        moved = copy.deepcopy(graph.nodes[obj])
        return GraphUpdate(upsert=[NodeUpsert(moved, there, "ontop_of")], source=f"bench {version}")
    raise ValueError("no object to move outside the task's rooms")


def _steps(plan: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"action": a, "target": t} for a, t in plan]


def say(
    command: str, node: str = "", plan: list[tuple[str, str]] | None = None, answer: Any = None, why: str = "..."
) -> str:
    body = {"command_name": command, "node_name": node, "plan": _steps(plan or []), "answer": answer or []}
    mode = "planning" if command == "plan" else "exploring"
    reasoning = f"{command} {node}".strip()
    return json.dumps({"chain_of_thought": why, "reasoning": reasoning, "mode": mode, "command": body})


def sayplan_answers(graph: SceneGraph, task: Task, floor_view_rooms: int) -> list[str]:
    """Expand what the plan needs (the floors first in a floor-level view), then plan."""
    answers: list[str] = []
    for room, what in ((task.source_room, task.obj), (task.target_room, task.target_asset)):
        floor = graph.parent(room) or ""
        if floors_first(graph, floor_view_rooms):
            why = f"the {what} is in {room}, which is on {floor} by its id; only floors are visible, so list {floor}"
            answers.append(say("expand", floor, why=why))
        answers.append(say("expand", room, why=f"{room} is visible now; expand it to see the {what}"))
    why = "both rooms are expanded and the floors they are on stay expanded, so every node of the plan is visible"
    answers.append(say("plan", plan=task.sayplan_steps(), answer=[task.obj], why=why))
    return answers


def lite_answers(graph: SceneGraph, task: Task, floor_view_rooms: int) -> list[str]:
    """The search agent expands what the plan needs (the floors first in a floor-level view); the planner plans."""

    def search(command: str, node: str = "") -> str:
        body = {"command_name": command, "node_name": node}
        return json.dumps({"chain_of_thought": "...", "reasoning": "...", "command": body})

    answers: list[str] = []
    for room in (task.source_room, task.target_room):
        if floors_first(graph, floor_view_rooms):
            answers.append(search("expand", graph.parent(room) or ""))
        answers.append(search("expand", room))
    plan = json.dumps({"chain_of_thought": "...", "plan": _steps(task.sayplan_steps()), "answer": [task.obj]})
    return [*answers, search("done"), plan]


def full_plan_answers(graph: SceneGraph, task: Task) -> list[str]:
    """LLM-As-Planner must spell out every move: the path planner's expansion of the high-level plan."""
    high = [PlanStep(a, t) for a, t in task.sayplan_steps()]
    full = PathPlanner(graph, goto_action="goto").expand_plan(high)
    return [json.dumps({"chain_of_thought": "...", "plan": _steps([(s.action, s.target) for s in full])})]


def lookplangraph_answers(task: Task) -> list[str]:
    return [
        json.dumps({"chain_of_thought": "...", "next_move": {"function_name": a, "function_target": t}})
        for a, t in task.lookplangraph_steps()
    ]


def ltl_answers(task: Task) -> list[str]:
    mapping = [{"phrase": r, "node": r} for r in (task.source_room, task.target_room)]
    formula = f"F & {task.source_room} F {task.target_room}"
    return [json.dumps({"mapping": mapping}), json.dumps({"formula": formula})]


def abstract_answers(task: Task) -> list[str]:
    step = {"sentence": task.abstract_instruction, "object": task.obj, "workspace": task.target_asset}
    return [json.dumps({"plans": [{"steps": [step]}]})]


#: Planner -> (instruction, answers) for a building; None: the planner cannot be scripted here, and why.
Script = Callable[[SceneGraph, Task], tuple[str, list[str]]]
SCRIPTS: dict[str, Script | str] = {
    "sayplan": lambda g, t: (t.instruction, sayplan_answers(g, t, SayPlanOptions().floor_view_rooms)),
    "llm_p": lambda g, t: (t.instruction, sayplan_answers(g, t, SayPlanOptions().floor_view_rooms)),
    "sayplan_lite": lambda g, t: (t.instruction, lite_answers(g, t, SayPlanOptions().floor_view_rooms)),
    "llm_as_planner": lambda g, t: (t.instruction, full_plan_answers(g, t)),
    "lookplangraph": lambda g, t: (t.instruction, lookplangraph_answers(t)),
    "ltl": lambda g, t: (t.ltl_instruction, ltl_answers(t)),
    "abstract": lambda g, t: (t.abstract_instruction, abstract_answers(t)),
    "embodiedrag": "not scripted: the nodes it may name are what its embedding retrieval returns for the model's "
    "own queries, which a scripted answer cannot know without a model",
    "embodiedrag_strict": "not scripted: as embodiedrag (its targets must be in the retrieved subgraph)",
}


# ----------------------------------------------------------------------------- the scripted server (a child process)
def serve(port_out: Any, latency: float) -> None:
    """An OpenAI-compatible chat endpoint answering from a script (`POST /script`) after exactly `latency` s."""
    script: list[str] = []
    prompts: list[list[str]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else each small reply waits for a delayed ACK (40 ms on Linux)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            """The exact prompt tokens of every request since the last GET, per request."""
            with lock:
                done = prompts[:]
                prompts.clear()
            self._reply(200, {"prompt_tokens": [sum(count_tokens(text) for text in p) for p in done]})

        def do_POST(self) -> None:
            arrived = time.perf_counter()
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/script":
                with lock:
                    script[:] = request
                self._reply(200, {})
                return
            with lock:
                answer = script.pop(0) if script else None
            if answer is None:
                self._reply(400, {"error": {"message": "the script has no answer left", "type": "invalid_request"}})
                return
            with lock:  # counted after the run (GET /tokens), so counting never delays an answer
                prompts.append([m["content"] for m in request["messages"]])
            time.sleep(max(0.0, latency - (time.perf_counter() - arrived)))
            self._reply(
                200,
                {
                    "id": "scripted",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": "scripted",
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},  # placeholders
                },
            )

    count_tokens("load the tokenizer before the first request")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_out.send(server.server_address[1])
    server.serve_forever()


def prompt_tokens(base: str) -> list[int]:
    """The exact (cl100k) prompt tokens of each request the server answered since the last call."""
    with urllib.request.urlopen(f"{base}/tokens", timeout=600) as response:
        counts: list[int] = json.loads(response.read())["prompt_tokens"]
    return counts


def post_script(base: str, answers: list[str]) -> None:
    request = urllib.request.Request(
        f"{base}/script", json.dumps(answers).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


# ----------------------------------------------------------------------------- measuring
@dataclass
class Run:
    wall_s: float
    cpu_s: float
    result: PlanResult


def plan_once(
    planner: str, backend: LlmBackend, graph: SceneGraph, instruction: str, profile: cProfile.Profile | None = None
) -> Run:
    options = PlannerOptions(budget=Budget(backoff_initial_s=0.0, backoff_max_s=0.0, max_transient_retries=0))
    worker = make_planner(planner, backend, options)
    wall, cpu = time.perf_counter(), time.process_time()
    result = worker.plan(graph, instruction) if profile is None else profile.runcall(worker.plan, graph, instruction)
    return Run(time.perf_counter() - wall, time.process_time() - cpu, result)


COLUMNS = (
    "| planner | rooms | nodes | verified | LLM calls | prompt tokens | largest prompt | wall s | non-LLM s "
    "| non-LLM share | planner CPU s | CPU share |"
)
#: The two tables: the first plan on a freshly loaded graph, and later plans after a one-object update.
PHASES = (
    ("cold", "first plan on a freshly loaded graph"),
    ("warm", "later plans on the same live graph, after a skill moved one object"),
)


def overhead_rows(
    sizes: list[int], latency: float, repeats: int, base: str, only: list[str], profile: cProfile.Profile | None = None
) -> list[str]:
    tables: dict[str, list[str]] = {phase: [] for phase, _ in PHASES}
    warm_cpu: dict[str, dict[int, float]] = {}  # planner -> rooms -> median planner CPU s of the warm plans
    backend = OpenAIBackend("scripted", base_url=f"{base}/v1", timeout_s=max(60.0, latency * 10))
    warmed = False
    for rooms in sizes:
        loaded = building(rooms)
        task = task_for(loaded)
        for planner in only:
            script = SCRIPTS.get(planner, "not scripted: a planner this bench does not know")
            if isinstance(script, str):
                for phase, _ in PHASES:
                    tables[phase].append(f"| {planner} | {rooms} | {len(loaded.nodes)} | {script} | | | | | | | | |")
                print(tables["cold"][-1], flush=True)
                continue
            if planner == "abstract" and not warmed:  # the embedding model loads once per process (about 7 s)
                from sayplan_core.retrieval import default_embedder

                default_embedder().embed(["warm-up"])
                warmed = True
            instruction, answers = script(loaded, task)
            runs: dict[str, list[Run]] = {phase: [] for phase, _ in PHASES}
            for _ in range(repeats):  # each repeat: a freshly loaded live graph, then a skill's update
                live, snapshots = loaded.copy(), GraphSnapshots()
                for version, (phase, _) in enumerate(PHASES, 1):
                    if version > 1:
                        apply_in_place(live, small_update(live, task, version))
                    post_script(base, answers)
                    runs[phase].append(plan_once(planner, backend, snapshots.of(live, version), instruction, profile))
            tokens = prompt_tokens(base)
            warm_cpu.setdefault(planner, {})[rooms] = statistics.median(r.cpu_s for r in runs["warm"])
            offset = 0
            for phase, _ in PHASES:
                tables[phase].append(_row(planner, rooms, len(loaded.nodes), runs[phase], tokens[offset:], latency))
                offset += len(runs[phase][0].result.calls)
                print(tables[phase][-1], flush=True)
    lines: list[str] = []
    for phase, title in PHASES:
        lines += [
            f"## Non-LLM time as a share of wall time, {title} (scripted model answering in {latency:g} s per call)",
            "",
            COLUMNS,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *tables[phase],
            "",
        ]
    lines += growth_rows(warm_cpu)
    lines += [
        "Every plan runs on a snapshot of a live graph, as a planner node's graph follower hands it (the snapshot's "
        "copy is the follower's cost, not the planner's). Cold: the live graph was just loaded, so nothing derived "
        "from it is kept. Warm: the same live graph after a skill's update moved one object in a room the task does "
        "not visit (the prompt text kept per node redoes only what the update touched). "
        "Non-LLM s: wall time minus the scripted latency of every call (median of the runs); it includes the HTTP "
        "round trips to the local server and any wait for a core on a loaded machine. Planner CPU s: the planner "
        "process's CPU time (the server's is not in it), median of the runs; CPU share: that time over itself plus "
        "the latency of every call, the share on a core of its own. Prompt tokens: cl100k, counted by the server "
        "after the runs, of the first run.",
        "",
    ]
    return lines


def _row(planner: str, rooms: int, nodes: int, runs: list[Run], tokens: list[int], latency: float) -> str:
    run = runs[0]
    calls = len(run.result.calls)
    wall = statistics.median(r.wall_s for r in runs)
    non_llm = statistics.median(r.wall_s - latency * len(r.result.calls) for r in runs)
    cpu = statistics.median(r.cpu_s for r in runs)
    verdict = "yes" if run.result.success else f"no: {run.result.message[:120]}"
    return (
        f"| {planner} | {rooms} | {nodes} | {verdict} | {calls} | {sum(tokens[:calls])} "
        f"| {max(tokens[:calls], default=0)} | {wall:.2f} | {non_llm:.3f} | {100 * non_llm / wall:.2f}% "
        f"| {cpu:.3f} | {100 * cpu / (cpu + latency * calls):.2f}% |"
    )


#: issue 42: a planner's CPU per plan on the live graph grows at most this much from the smallest building to the
#: largest (SayPlan's growth)
GROWTH_TARGET = 3.0


def growth_rows(warm_cpu: dict[str, dict[int, float]]) -> list[str]:
    """Per planner, the warm plans' CPU on the smallest and the largest building and their ratio (unrounded
    medians), against GROWTH_TARGET."""
    rows = []
    for planner, by_size in warm_cpu.items():
        if len(by_size) < 2:
            continue
        small, large = min(by_size), max(by_size)
        ratio = by_size[large] / by_size[small]
        verdict = "yes" if ratio <= GROWTH_TARGET else "no"
        rows.append(
            f"| {planner} | {small} | {1000 * by_size[small]:.1f} | {large} | {1000 * by_size[large]:.1f} "
            f"| {ratio:.2f}x | {verdict} |"
        )
    if not rows:
        return []
    return [
        f"## Growth: planner CPU per plan on the live graph, smallest to largest building (target <= "
        f"{GROWTH_TARGET:g}x)",
        "",
        "| planner | rooms | CPU ms | rooms | CPU ms | growth | within target |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        "The warm plans' medians, unrounded before the ratio. The task's rooms are on the first and the last floor, "
        "so the plan itself grows with the building (a walk through every floor and back): part of the growth is "
        "the plan's, not the building's.",
        "",
    ]


def token_rows(sizes: list[int]) -> list[str]:
    lines = [
        "## Collapsed graph tokens (cl100k): full graph, every room, floors only",
        "",
        "| rooms | floors | nodes | full | room-level collapse | cut | floor-level collapse | cut "
        "| one floor expanded | cut |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rooms in sizes:
        graph = building(rooms)
        full = count_tokens(to_prompt_text(graph))
        room_level = count_tokens(collapse(graph).text())
        top = collapse(graph, top_only=True)
        floor_level = count_tokens(top.text())
        top.expand(sorted(graph.ids_of_type("floor"))[0])
        one_floor = count_tokens(top.text())

        def cut(part: int, whole: int = full) -> str:
            return f"{100 * (1 - part / whole):.2f}%"

        lines.append(
            f"| {rooms} | {graph.count('floor')} | {len(graph.nodes)} | {full} | {room_level} | {cut(room_level)} "
            f"| {floor_level} | {cut(floor_level)} | {one_floor} | {cut(one_floor)} |"
        )
        print(lines[-1], flush=True)
    default = SayPlanOptions().floor_view_rooms
    lines += [
        "",
        f"SayPlan starts at the floors when a building has more than `sayplan.floor_view_rooms` = {default} rooms "
        "on two floors or more; below that, with every room visible.",
        "",
    ]
    return lines


#: The planners whose floor-level run can be recorded, and their scripted answers.
SCRIPTED_FLOOR_RUNS: dict[str, Callable[[SceneGraph, Task, int], list[str]]] = {
    "sayplan": sayplan_answers,
    "sayplan_lite": lite_answers,
}
FLOOR_RUN_NAMES = {"sayplan": "SayPlan", "sayplan_lite": "SayPlan Lite"}


def record_floor_transcript(path: Path, planner: str = "sayplan") -> None:
    """The SayPlan (or SayPlan Lite) run on the 1,000-room building, recorded with its prompts (replay checks them)."""
    graph = building(1000)
    task = task_for(graph)
    answers = SCRIPTED_FLOOR_RUNS[planner](graph, task, SayPlanOptions().floor_view_rooms)
    calls = [{"response": {"text": a}} for a in answers]
    scripted = ReplayBackend({"format": TRANSCRIPT_FORMAT, "version": 1, "calls": calls}, "scripted")
    recorder = RecordingBackend(scripted)
    run = plan_once(planner, recorder, graph, task.instruction)
    if not run.result.success:
        raise SystemExit(f"the scripted run failed: {run.result.message}")
    data = recorder.transcript()
    flag = "" if planner == "sayplan" else f" --record-planner {planner}"
    data["note"] = (
        f"{FLOOR_RUN_NAMES[planner]} on generate_building(BuildingSpec(floors=10, rooms_per_floor=100, seed=0)): "
        "a floor-level search (floors, then rooms) by scripted answers; written by scripts/bench_planning_overhead.py "
        f"--record-floor-transcript{flag}"
    )
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path} ({len(answers)} calls)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the scripted model takes per answer")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="rooms per building")
    parser.add_argument("--repeats", type=int, default=3, help="runs per planner and building (medians)")
    parser.add_argument("--planners", default="", help="comma-separated planner ids (default: every bundled one)")
    parser.add_argument("--write", type=Path, help="also write the tables to this Markdown file (docs/measured/)")
    parser.add_argument("--profile", type=Path, help="cProfile the planner runs into this file (no token table)")
    parser.add_argument("--record-floor-transcript", type=Path, help="record the 1,000-room SayPlan run there")
    parser.add_argument(
        "--record-planner", choices=sorted(SCRIPTED_FLOOR_RUNS), default="sayplan", help="the run to record"
    )
    args = parser.parse_args()
    if args.record_floor_transcript:
        record_floor_transcript(args.record_floor_transcript, args.record_planner)
        return
    only = args.planners.split(",") if args.planners else PLANNERS.bundled()
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    server = context.Process(target=serve, args=(send, args.latency), daemon=True)
    server.start()
    try:
        base = f"http://127.0.0.1:{receive.recv()}"
        profile = cProfile.Profile(time.process_time) if args.profile else None  # CPU: the machine may be loaded
        tokens = [] if profile else token_rows(args.sizes)
        lines = tokens + overhead_rows(args.sizes, args.latency, args.repeats, base, only, profile)
    finally:
        server.terminate()
        server.join()
    if profile is not None:
        profile.dump_stats(args.profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    text = "\n".join(lines)
    print(text)
    if args.write:
        measured_doc.write(args.write, "Planning overhead: non-LLM time and prompt tokens vs building size", text)


if __name__ == "__main__":
    main()
