"""Issue 28's SayPlan-family speed-ups against the straightforward versions they replaced, written out here.

- `OpenAIBackend` builds the request body itself and sends it through the SDK's `client.post` instead of
  `chat.completions.create` (whose `transform` walk changes nothing in plain data). Oracle: `create` with the
  arguments the backend used to pass; the bytes of the body and every header on the wire must be the same. It reads
  the answer from the JSON the SDK decodes. Oracle: the SDK's `ChatCompletion`, read as the backend read it before.
- It encodes the body with orjson when nothing in it could encode otherwise (`encoded_body`). Oracle: the SDK's
  encoder (`openapi_dumps`) on any JSON-like value, floats, huge integers, subclasses, surrogates and deep nesting
  included: the bytes are the same, or the body is left to the SDK.
- `PathPlanner` runs networkx's bidirectional Dijkstra written out with inline edge costs, and finds out that two
  nodes are not connected from the search instead of computing the components first. Oracle: networkx's
  `bidirectional_dijkstra` on the same costs (the same path, ties included) and the components check.
- `floors_first` reads the floors' children instead of every room's parent. Oracle: its definition, room by room.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai._utils._json import openapi_dumps
from openai.types.chat import ChatCompletion
from world_shapes import BOUNDED, BUILDINGS, link_cost_reference

from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.views import collapse, floors_first
from sayplan_core.llm.openai_backend import OpenAIBackend, encoded_body, image_mime
from sayplan_core.llm.types import LlmRequest, LlmTransientError
from sayplan_core.nav.path_planner import NoPathError, PathPlanner

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
REPLY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
).encode()


# ----------------------------------------------------------------------------- OpenAIBackend vs create()
class Wire:
    """A chat endpoint that keeps what arrives: the request line, every header and the body's bytes."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[tuple[str, str]], bytes]] = []
        self.reply = REPLY
        wire = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                wire.seen.append((self.requestline, list(self.headers.items()), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(wire.reply)))
                self.end_headers()
                self.wfile.write(wire.reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    server = Wire()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def create_as_before(backend: OpenAIBackend, request: LlmRequest) -> None:
    """The call the backend made before: `chat.completions.create` with the request's fields."""
    messages: list[Any] = list(request.messages)
    if request.images:
        last = messages[-1]
        parts: list[dict[str, Any]] = [{"type": "text", "text": last["content"]}]
        for image in request.images:
            import base64

            url = f"data:{image_mime(image)};base64,{base64.b64encode(image).decode()}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        messages[-1] = {"role": last["role"], "content": parts}
    kwargs: dict[str, Any] = {
        "model": backend.info.model,
        "messages": messages,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if request.schema is not None:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.schema, "strict": backend.strict_schema},
        }
    backend._client.chat.completions.create(**kwargs)


TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)  # lone surrogates cannot be sent at all
SCHEMAS = st.none() | st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(
            TEXT, st.fixed_dictionaries({"type": st.just("string"), "enum": st.lists(TEXT, max_size=6)}), max_size=3
        ),
        "additionalProperties": st.booleans(),
    }
)


@BOUNDED
@given(
    messages=st.lists(
        st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]), "content": TEXT}),
        min_size=1,
        max_size=4,
    ),
    schema=SCHEMAS,
    schema_name=st.sampled_from(["sayplan", "plan", "answer"]),
    temperature=st.sampled_from([0.0, 0.2, 1.0, 0.7000000000000001]),
    max_tokens=st.integers(1, 100_000),
    images=st.lists(st.just(PNG), max_size=2).map(tuple),
    strict=st.booleans(),
    api_key=st.sampled_from(["", "sk-test"]),
)
def test_openai_body_is_the_sdks(
    wire: Wire,
    messages: list[dict[str, str]],
    schema: dict[str, Any] | None,
    schema_name: str,
    temperature: float,
    max_tokens: int,
    images: tuple[bytes, ...],
    strict: bool,
    api_key: str,
) -> None:
    backend = OpenAIBackend("gpt-test", base_url=wire.url, api_key=api_key or None, strict_schema=strict)
    request = LlmRequest(messages, schema, schema_name, temperature, max_tokens, images)
    wire.seen.clear()
    wire.reply = REPLY
    create_as_before(backend, request)
    answer = backend.complete(request)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ("{}", 3, 2)
    before, now = wire.seen
    assert now == before  # request line, headers (names, values, order) and body bytes


class Label(str):
    """A str subclass (json.dumps writes its value; a subclass is left to the SDK)."""


PLAIN_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-06, 1e-07, 2.5e-05, 1e16, 1e22, 5e-324, -0.0])  # orjson writes some as 1e-6
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
)
HOSTILE_LEAVES = (
    PLAIN_LEAVES
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([math.nan, math.inf, -math.inf])
    | st.text(max_size=20)  # lone surrogates included: the SDK's encoder fails on them, so must this path
    | st.text(max_size=5).map(Label)
)


def json_values(leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=3).map(tuple)
            | st.dictionaries(keys, inner, max_size=4)
        ),
        max_leaves=20,
    )


def sdk_bytes(value: Any) -> bytes | None:
    """What the SDK sends for a body, or None when its encoder refuses it."""
    try:
        return openapi_dumps(value)
    except (ValueError, TypeError, UnicodeEncodeError, RecursionError):
        return None


@BOUNDED
@given(body=st.dictionaries(st.text(max_size=8), json_values(PLAIN_LEAVES, st.text(max_size=8)), max_size=4))
def test_plain_bodies_are_encoded_here_as_the_sdk_does(body: dict[str, Any]) -> None:
    ours = encoded_body(body)
    if ours is None:  # only a float orjson would write otherwise sends the body to the SDK
        assert any(type(v) is float for v in leaves_of(body))
    else:
        assert ours == sdk_bytes(body)


@BOUNDED
@given(
    body=st.dictionaries(
        st.text(max_size=8), json_values(HOSTILE_LEAVES, st.text(max_size=8) | st.integers(0, 5)), max_size=4
    )
)
def test_any_body_is_the_sdks_bytes_or_left_to_it(body: dict[str, Any]) -> None:
    ours = encoded_body(body)
    if ours is not None:
        assert ours == sdk_bytes(body)


def leaves_of(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves_of(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves_of(item)
    else:
        yield value


@pytest.mark.parametrize("depth", [1, 127, 128, 300, 2000])
def test_deep_bodies_are_left_to_the_sdk_or_encoded_alike(depth: int) -> None:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    ours = encoded_body({"messages": value})
    assert ours is None or ours == sdk_bytes({"messages": value})
    assert (ours is None) == (depth >= 128)


def test_a_plain_whole_graph_body_is_encoded_here() -> None:
    """The case it is for: messages of plain text and a schema of plain data (else nothing would be gained)."""
    text = json.dumps({"nodes": {"room": [{"id": f"room_{i}", "floor": "floor_0"} for i in range(2000)]}})
    body = {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "plan"}, {"role": "user", "content": text}],
        "max_tokens": 2000,
        "response_format": {"type": "json_schema", "json_schema": {"name": "plan", "schema": {"type": "object"}}},
        "temperature": 0.2,
    }
    ours = encoded_body(body)
    assert ours is not None and ours == sdk_bytes(body)


def read_as_before(backend: OpenAIBackend, completion: ChatCompletion) -> tuple[Any, ...]:
    """What the backend read from the SDK's ChatCompletion before."""
    if not completion.choices:
        return ("empty_response",)
    choice, usage = completion.choices[0], completion.usage
    return (
        choice.message.content or "",
        usage.prompt_tokens if usage else 0,
        usage.completion_tokens if usage else 0,
        completion.model or backend.info.model,
        str(choice.finish_reason or "stop"),
        getattr(choice.message, "refusal", None),
    )


MAYBE_TEXT = st.none() | TEXT


@BOUNDED
@given(
    content=MAYBE_TEXT,
    refusal=MAYBE_TEXT,
    finish=st.sampled_from([None, "stop", "length", "content_filter", "tool_calls"]),
    usage=st.none() | st.tuples(st.integers(-5, 10**7) | st.booleans(), st.integers(0, 10**7)),
    model=st.sampled_from([None, "", "gpt-test", "other-model"]),
    choices=st.sampled_from([0, 1, 2]),
)
def test_openai_reads_the_answer_as_the_sdks_model(
    wire: Wire,
    content: str | None,
    refusal: str | None,
    finish: str | None,
    usage: tuple[int, int] | None,
    model: str | None,
    choices: int,
) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": i, "message": message, "finish_reason": finish} for i in range(choices)],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": 1}
    wire.reply = json.dumps(body).encode()
    backend = OpenAIBackend("gpt-test", base_url=wire.url)
    request = LlmRequest([{"role": "user", "content": "hi"}])
    expected = read_as_before(
        backend, backend._client.chat.completions.create(model="gpt-test", messages=request.messages)
    )
    try:
        answer = backend.complete(request)
    except LlmTransientError as exc:
        assert (exc.kind,) == expected
        return
    read = (
        answer.text,
        answer.prompt_tokens,
        answer.completion_tokens,
        answer.model,
        answer.finish_reason,
        answer.refusal,
    )
    assert read == expected


@pytest.mark.parametrize(
    "reply",
    [b"[1, 2]", b'"text"', b'{"choices": {"a": 1}}', b'{"choices": [{"no_message": 1}]}', b'{"choices": ["x"]}'],
)
def test_openai_answers_it_cannot_read_are_bad_responses(wire: Wire, reply: bytes) -> None:
    """Shapes the SDK's model let through unchecked, so reading them failed with an AttributeError; now they are a
    transient bad response, which the session retries."""
    wire.reply = reply
    backend = OpenAIBackend("gpt-test", base_url=wire.url)
    with pytest.raises(LlmTransientError, match="cannot be read") as refused:
        backend.complete(LlmRequest([{"role": "user", "content": "hi"}]))
    assert refused.value.kind == "bad_response"


# ----------------------------------------------------------------------------- PathPlanner vs networkx
def varied(seed: int, links: list[tuple[int, int, int]], cuts: list[int], unplaced: bool) -> SceneGraph:
    """A small building with extra links (weights from a few values, so many paths tie) and some links cut (so
    some pairs are not connected). unplaced: no positions, so every link costs its weight or 1 (ties everywhere)."""
    graph = BUILDINGS[seed].copy()
    if unplaced:
        for node_id in list(graph.nodes):
            graph.replace_node(dataclasses.replace(graph.nodes[node_id], position=None))
    nav = sorted(graph.nav.nodes)
    for i, j, weight in links:
        a, b = nav[i % len(nav)], nav[j % len(nav)]
        if a != b and not graph.nav.has_edge(a, b):
            graph.connect(a, b, float(weight) if weight else None)
    edges = sorted(tuple(sorted(e)) for e in graph.nav.edges)
    for cut in cuts:
        if edges:
            a, b = edges.pop(cut % len(edges))
            graph.disconnect(a, b)
    return graph


@BOUNDED
@given(
    seed=st.sampled_from(sorted(BUILDINGS)),
    links=st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 10_000), st.sampled_from([0, 2, 50, 60])), max_size=8
    ),
    cuts=st.lists(st.integers(0, 10_000), max_size=4),
    pairs=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=10),
    method=st.sampled_from(["dijkstra", "astar"]),
    unplaced=st.booleans(),
)
def test_path_search_is_networkx_bidirectional_dijkstra(
    seed: int,
    links: list[tuple[int, int, int]],
    cuts: list[int],
    pairs: list[tuple[int, int]],
    method: str,
    unplaced: bool,
) -> None:
    graph = varied(seed, links, cuts, unplaced)
    nav = sorted(graph.nav.nodes)
    planner = PathPlanner(graph)
    for i, j in pairs:
        start, goal = nav[i % len(nav)], nav[j % len(nav)]
        if not nx.has_path(graph.nav, start, goal):
            with pytest.raises(NoPathError) as refused:
                planner.shortest_path(start, goal, method)
            assert str(refused.value) == f"'{goal}' is unreachable from '{start}': no navigation path joins them"
            assert graph.nav_component(start) != graph.nav_component(goal)
            continue
        found = planner.shortest_path(start, goal, method)
        if method == "dijkstra":
            cost, nodes = nx.bidirectional_dijkstra(
                graph.nav, start, goal, weight=lambda a, b, _: link_cost_reference(graph, a, b)
            )
            assert (found.nodes, found.cost) == (nodes, float(cost))
        else:
            assert found.nodes == nx.astar_path(
                graph.nav, start, goal, heuristic=planner._heuristic(goal), weight=planner.edge_cost
            )


def test_path_search_breaks_ties_as_networkx() -> None:
    """A grid of unplaced poses, every link costing 1 (and a few 2): most pairs have many shortest paths, and the
    one found depends on the order the search settles nodes of equal distance."""
    graph = SceneGraph()
    side = 5
    for x in range(side):
        for y in range(side):
            graph.add_node(Node(f"p{x}_{y}", "pose"))
    for x in range(side):
        for y in range(side):
            if x + 1 < side:
                graph.connect(f"p{x}_{y}", f"p{x + 1}_{y}", 2.0 if (x + y) % 7 == 0 else None)
            if y + 1 < side:
                graph.connect(f"p{x}_{y}", f"p{x}_{y + 1}")
    planner = PathPlanner(graph)
    nodes = sorted(graph.nav.nodes)
    for start in nodes:
        for goal in nodes:
            cost, path = nx.bidirectional_dijkstra(
                graph.nav, start, goal, weight=lambda a, b, _: link_cost_reference(graph, a, b)
            )
            found = planner.shortest_path(start, goal)
            assert (found.nodes, found.cost) == (path, float(cost)), (start, goal)


def test_path_search_refusals_keep_their_text() -> None:
    graph = generate_building(BuildingSpec(floors=2, rooms_per_floor=3, seed=0))
    room = sorted(graph.ids_of_type("room"))[0]
    for a, b in list(graph.nav.edges(room)):
        graph.disconnect(a, b)
    other = sorted(graph.ids_of_type("room"))[-1]
    planner = PathPlanner(graph)
    with pytest.raises(NoPathError, match=f"'{other}' is unreachable from '{room}': no navigation path joins them"):
        planner.shortest_path(room, other)
    with pytest.raises(ValueError, match="unknown path method 'bfs'"):
        planner.shortest_path(other, sorted(graph.ids_of_type("room"))[1], "bfs")
    with pytest.raises(NoPathError, match="no navigation path joins them"):  # the components are checked first
        planner.shortest_path(room, other, "bfs")
    asset = sorted(graph.ids_of_type("asset"))[0]
    with pytest.raises(GraphError, match="paths join room and pose nodes"):
        planner.shortest_path(room, asset)
    assert planner.shortest_path(room, room).nodes == [room]


# ----------------------------------------------------------------------------- floors_first vs its definition
def floors_first_reference(graph: SceneGraph, rooms_above: int) -> bool:
    rooms = graph.ids_of_type("room")
    if rooms_above <= 0 or len(rooms) <= rooms_above or len(graph.ids_of_type("floor")) < 2:
        return False
    return all(graph.parent(r) is not None and graph.nodes[graph.parent(r) or ""].type == "floor" for r in rooms)


@BOUNDED
@given(
    seed=st.sampled_from(sorted(BUILDINGS)),
    moves=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["building", "none", "floor"])), max_size=3),
    rooms_above=st.integers(0, 8),
)
def test_floors_first_matches_its_definition(seed: int, moves: list[tuple[int, str]], rooms_above: int) -> None:
    graph = BUILDINGS[seed].copy()
    graph.add_node(Node("the_building", "building"))
    for index, where in moves:
        rooms = sorted(graph.ids_of_type("room"))
        room = rooms[index % len(rooms)]
        if where == "building":
            graph.set_parent(room, "the_building")
        elif where == "floor":
            graph.set_parent(room, graph.ids_of_type("floor")[index % graph.count("floor")])
        else:  # a room of its own, outside the hierarchy
            graph.add_node(Node(f"loose_{index}_{len(graph.nodes)}", "room"))
    assert floors_first(graph, rooms_above) == floors_first_reference(graph, rooms_above)


def test_view_reuses_a_visible_set_it_is_given() -> None:
    graph = generate_building(BuildingSpec(floors=2, rooms_per_floor=3, seed=1))
    view = collapse(graph, top_only=True)
    view.expand(sorted(graph.ids_of_type("floor"))[0])
    visible = view.visible_ids()
    assert view.text(visible=visible) == view.text()
    assert view.expandable_ids(visible) == view.expandable_ids()
