"""Hostile review of three of issue 28's changes: snapshot nodes that refuse writes (SnapshotNode), OpenAIBackend's
own POST through the SDK (`client.post(..., cast_to=object)` and `_answer`), and the columns loader handing
networkx its dicts by attribute (`prechecked_graph`).

Found and fixed here:

- OpenAIBackend: an answer whose Content-Type is not JSON (none at all, or text/plain, as some compatible servers
  and proxies send) made every call a bad_response: with `cast_to=object` the SDK hands back the body's text,
  where ChatCompletion's parse read its JSON anyway (a1a255d planned through such a server). The text is now
  decoded as JSON.
- OpenAIBackend: `"usage": {}` (a usage object without the counts) was a bad_response (KeyError); a1a255d read the
  missing counts as None, which the session refuses as invalid_usage. Read the same way again.
- OpenAIBackend (before this change too): a message whose content is a number, list or object came back as the
  response's text, and parse_json_answer then failed with a TypeError/AttributeError escaping the session; JSON
  nested deeper than the decoder recurses escaped as a RecursionError. Both are a transient bad_response now.
- SnapshotNode: `dataclasses.replace(snapshot_node, ...)` failed with an AttributeError (the class's __init__ ran
  into the write guard, whose message read the unset id); it now gives a plain Node, as the other copies do.
  `del node.field` on a snapshot node went through the guard and broke every later reader of the snapshot; it
  is refused as a write.

What held up:

- No code path in src/ or scripts/ writes a field of a snapshot's node: the planners' tests, the closed loop's,
  the simulator's, LTL's, abstract's, EmbodiedRAG's, LookPlanGraph's, the floors' and views' tests all passed
  with every bundled environment loaded as `GraphSnapshots().of(graph, 1)` (a pytest plugin wrapping load_env);
  the only failures were tests that write into the env themselves. Writes found by grep all land on untracked
  copies (`WorldState.apply_to`, `apply_setup`, `subgraph`, loaders) or a planner's own memory graph; below, the
  simulator, WorldState and LookPlanGraph's memory on a snapshot. No `type(x) is Node` check outside model.py.
- Equality with the plain node, unhashability, copy.copy/deepcopy/pickle giving plain Nodes, repr.
- OpenAIBackend against a hostile server: every other shape tried (null, numbers, strings, nested lists, choices
  empty/null/a string/[null], message null or a string, content null, refusal set, finish_reason length and
  content_filter, usage null or of the wrong type, an oversized body, HTTP 400/401/429/500 with and without
  JSON, a slow answer past the deadline, a dropped connection) gives the same typed outcome as a1a255d or, where
  a1a255d let an AttributeError escape, a transient bad_response.
- networkx's views of a columns-loaded graph (tree.succ/pred/adj/nodes/edges, nav.adj/edges/nodes) stay the same
  as a graph built item by item through random sequences of every SceneGraph mutator and direct networkx edits.

Left as is (documented in docs/concepts/planning_at_scale.md): in-place edits of a snapshot node's lists and dicts
are not guarded, and `copy.copy`/`dataclasses.replace` of a snapshot node share its lists, as they do for a plain
node, so copy-then-append code would still write into the snapshot.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_native_columns import buildings
from world_shapes import accepted_steps

from sayplan_core.envs import load_env
from sayplan_core.graph import native_format
from sayplan_core.graph.columns import bulk_graph, to_rows
from sayplan_core.graph.model import GraphError, Node, SceneGraph, SnapshotNode
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.session import BadAnswerError, BudgetExhaustedError, LlmSession
from sayplan_core.llm.types import LlmError, LlmRequest, LlmTransientError
from sayplan_core.planners.lookplangraph import memory_graph, truth_reveal_hook
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import WorldState

REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-test",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"a": 1}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


class Server:
    """A chat endpoint that answers what the test sets: status, Content-Type (None: no header) and body."""

    def __init__(self) -> None:
        self.status, self.content_type, self.body = 200, "application/json", json.dumps(REPLY).encode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(server.status)
                if server.content_type is not None:
                    self.send_header("Content-Type", server.content_type)
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def answer(self, body: bytes, content_type: str | None = "application/json", status: int = 200) -> None:
        self.status, self.content_type, self.body = status, content_type, body


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    out = Server()
    thread = threading.Thread(target=out.http.serve_forever, daemon=True)
    thread.start()
    yield out
    out.http.shutdown()
    out.http.server_close()


def ask(server: Server) -> Any:
    return OpenAIBackend("gpt-test", base_url=server.url, timeout_s=5).complete(
        LlmRequest([{"role": "user", "content": "hi"}])
    )


def with_message(message: Any = None, **fields: Any) -> bytes:
    data = copy.deepcopy(REPLY)
    if message is not None:
        data["choices"][0]["message"] = message
    data.update(fields)
    return json.dumps(data).encode()


# ----------------------------------------------------------------------------- OpenAIBackend
@pytest.mark.parametrize("content_type", [None, "text/plain", "text/html; charset=utf-8"])
def test_a_json_answer_not_labelled_as_json_is_read(server: Server, content_type: str | None) -> None:
    """a1a255d's create() parsed it (ChatCompletion's parse tries the JSON whatever the type); cast_to=object
    returned the text, which _answer refused as a bad response on every call."""
    server.answer(json.dumps(REPLY).encode(), content_type)
    answer = ask(server)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens, answer.model) == ('{"a": 1}', 3, 2, "gpt-test")


def test_text_that_is_not_json_under_any_type_is_a_bad_response(server: Server) -> None:
    server.answer(b"<html>gateway</html>", "text/html")
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


def test_a_usage_object_without_counts_reads_as_before(server: Server) -> None:
    """As a1a255d: the counts missing are None, which the session refuses as a usage report (invalid_usage)."""
    server.answer(with_message(usage={}))
    answer = ask(server)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ('{"a": 1}', None, None)


@pytest.mark.parametrize("content", [5, 1.5, True, ["x"], [{"type": "text", "text": "{}"}], {"a": 1}])
def test_content_that_is_not_text_is_a_bad_response(server: Server, content: Any) -> None:
    """Before, it came back as the response's text and parse_json_answer failed with a TypeError/AttributeError
    that escaped the session."""
    server.answer(with_message({"role": "assistant", "content": content}))
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


@pytest.mark.parametrize(
    "body", [b"[" * 100_000 + b"]" * 100_000, b'{"choices": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"]
)
def test_json_nested_too_deeply_is_a_bad_response(server: Server, body: bytes) -> None:
    server.answer(body)
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


HOSTILE: list[tuple[bytes, str | None, int]] = [
    (b"null", "application/json", 200),
    (b"42", "application/json", 200),
    (b'"x"', "application/json", 200),
    (b"[[[1]]]", "application/json", 200),
    (b"{}", "application/json", 200),
    (with_message(choices=[]), "application/json", 200),
    (with_message(choices=None), "application/json", 200),
    (with_message(choices="abc"), "application/json", 200),
    (with_message(choices=[None]), "application/json", 200),
    (with_message(choices=[{"message": None}]), "application/json", 200),
    (with_message("hi"), "application/json", 200),
    (with_message({"role": "assistant", "content": None}), "application/json", 200),
    (with_message({"role": "assistant", "content": None, "refusal": "no"}), "application/json", 200),
    (with_message(usage="x"), "application/json", 200),
    (with_message({"role": "assistant", "content": 5}), "application/json", 200),
    (with_message({"role": "assistant", "content": ["{}"]}), "application/json", 200),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", 200),
    (with_message(usage=[1]), "application/json", 200),
    (with_message(usage={"prompt_tokens": "3"}), "application/json", 200),
    (with_message(model=5), "application/json", 200),
    (json.dumps(REPLY).encode()[:40], "application/json", 200),
    (b"null", None, 200),
    (b"[1]", "text/plain", 200),
    (b'{"error": {"message": "bad"}}', "application/json", 400),
    (b"bad", "text/plain", 401),
    (b"[1]", "application/json", 429),
    (b'{"error": "x"}', "application/json", 500),
    (b"oops", "text/html", 503),
]


@pytest.mark.parametrize(("body", "content_type", "status"), HOSTILE)
def test_hostile_answers_through_the_session_end_in_typed_errors(
    server: Server, body: bytes, content_type: str | None, status: int
) -> None:
    """Through LlmSession.ask, as a planner asks: an answer, a BadAnswerError retried, or a typed LLM error; never
    an AttributeError, TypeError or KeyError."""
    server.answer(body, content_type, status)
    session = LlmSession(OpenAIBackend("gpt-test", base_url=server.url, timeout_s=5), sleep=lambda s: None)
    try:
        session.ask("plan", [{"role": "user", "content": "hi"}], None, lambda data: data)
    except Exception as exc:  # the point: which exceptions come out
        assert isinstance(exc, (LlmError, BudgetExhaustedError, BadAnswerError)), repr(exc)
        assert not isinstance(exc, (AttributeError, TypeError, KeyError, RecursionError)), repr(exc)


# ----------------------------------------------------------------------------- SnapshotNode
def snapshot() -> tuple[SceneGraph, SceneGraph]:
    live = load_env("office")
    return live, GraphSnapshots().of(live, 1)


def test_dataclasses_replace_of_a_snapshot_node_is_a_plain_node() -> None:
    live, shot = snapshot()
    node = shot.nodes["apple1"]
    assert type(node) is SnapshotNode
    edited = dataclasses.replace(node, name="green apple")
    assert type(edited) is Node and edited.name == "green apple" and edited.id == "apple1"
    edited.states = ["x"]  # a plain node: writes go through
    assert shot.nodes["apple1"].name == live.nodes["apple1"].name
    with pytest.raises(GraphError, match="unknown type"):  # the constructor's checks still run
        dataclasses.replace(node, type="bogus")


@pytest.mark.parametrize("field", ["id", "name", "states", "position", "attributes"])
def test_deleting_a_snapshot_nodes_field_is_refused(field: str) -> None:
    _, shot = snapshot()
    with pytest.raises(GraphError, match="apple1"):
        delattr(shot.nodes["apple1"], field)
    assert native_format.graph_to_dict(shot)  # every reader still finds every field


def test_a_bare_snapshot_node_refuses_writes_with_a_graph_error() -> None:
    bare = object.__new__(SnapshotNode)
    with pytest.raises(GraphError, match="'\\?'"):
        bare.id = "x"


@pytest.mark.parametrize("env", ["office", "home"])
def test_the_simulator_and_worldstate_run_on_a_snapshot(env: str) -> None:
    """Steps the simulator accepts, apply_to, refresh and LookPlanGraph's memory graph (commit) on a snapshot:
    nothing writes into the snapshot's nodes, and the snapshot stays what it copied."""
    live = load_env(env)
    shot = GraphSnapshots().of(live, 1)
    before = native_format.graph_to_dict(shot)
    for action_set, graph in (("sayplan", shot), ("lookplangraph", memory_graph(shot))):
        actions = load_action_set(action_set)
        hook = truth_reveal_hook(shot) if action_set == "lookplangraph" else None
        state = WorldState.from_graph(graph, reveal_hook=hook)
        shown = state.apply_to()
        for _ in range(25):
            accepted = accepted_steps(state, actions)
            if not accepted:
                break
            apply_step(state, accepted[len(accepted) // 2], actions)
            shown = state.refresh(shown)
            if graph is not shot:
                state.commit()
    assert native_format.graph_to_dict(shot) == before


# ----------------------------------------------------------------------------- prechecked_graph's networkx dicts
def views(graph: SceneGraph) -> list[Any]:
    tree, nav = graph.tree, graph.nav
    return [
        [(k, v.id, v.type, v.name, v.states, v.position) for k, v in graph.nodes.items()],
        [(t, sorted(ids)) for t, ids in graph._by_type.items()],
        list(tree.nodes),
        [(k, list(v.items())) for k, v in tree.succ.items()],
        [(k, list(v.items())) for k, v in tree.pred.items()],
        [(k, list(v.items())) for k, v in tree.adj.items()],
        list(tree.edges(data="relation")),
        list(tree.in_degree),
        list(tree.out_degree),
        list(nav.nodes),
        [(k, list(v.items())) for k, v in nav.adj.items()],
        list(nav.edges(data="weight")),
        list(nav.degree),
        tree._adj is tree._succ,
        [(k, list(v.items())) for k, v in tree._succ.items()] == [(k, list(v.items())) for k, v in tree.adj.items()],
    ]


OPS = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 10_000), st.integers(0, 10_000)), max_size=30)


def mutate(graph: SceneGraph, op: int, i: int, j: int, step: int) -> str:
    """One mutation picked by numbers, the same on any graph with the same nodes; its outcome as text."""
    ids = list(graph.nodes)
    a, b = ids[i % len(ids)], ids[j % len(ids)]
    places = [n for n in ids if graph.nodes[n].type in ("room", "pose")]
    try:
        if op == 0:
            graph.add_node(Node(f"new_{step}", "object"), a, "ontop_of")
        elif op == 1:
            graph.set_parent(a, b, "inside")
        elif op == 2:
            graph.remove_node(a)
        elif op == 3 and places:
            graph.connect(places[i % len(places)], places[j % len(places)], weight=float(i % 7))
        elif op == 4 and places:
            graph.disconnect(places[i % len(places)], places[j % len(places)])
        elif op == 5:
            graph.set_states(a, ["open"] if i % 2 else [])
        elif op == 6:
            graph.replace_node(dataclasses.replace(graph.nodes[a], name=f"n{step}"))
        elif op == 7:  # networkx directly (views must follow the dicts it edits)
            graph.tree.add_edge(f"x_{step}", a, relation="in")
            graph.tree.remove_node(f"x_{step}")
        elif op == 8 and places:
            graph.nav.add_edge(places[i % len(places)], f"y_{step}")
            graph.nav.remove_node(f"y_{step}")
        else:
            graph.tree.add_node(f"z_{step}")
            graph.tree.remove_node(f"z_{step}")
    except GraphError as exc:
        return f"refused: {exc}"
    return "ok"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(buildings(), OPS)
def test_networkx_views_of_a_columns_load_follow_every_mutator(graph: SceneGraph, ops: list[Any]) -> None:
    data = orjson.loads(native_format.dumps(graph, layout="columns"))
    bulk = bulk_graph(data, owned=True)
    assert bulk is not None
    rows = native_format._checked_graph("b", *to_rows(data, "<test>"), "<test>")
    assert views(bulk) == views(rows)  # the views cached now must follow every later change
    for step, (op, i, j) in enumerate(ops):
        assert mutate(bulk, op, i, j, step) == mutate(rows, op, i, j, step)
        assert views(bulk) == views(rows)
    for make in (lambda g: g.copy(), lambda g: g.subgraph(list(g.nodes)[::2])):
        assert views(make(bulk)) == views(make(rows))
