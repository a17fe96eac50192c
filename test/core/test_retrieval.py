"""The entity index with the real MiniLM model and both vector stores; embedding endpoints over real HTTP."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from pytest_httpserver import HTTPServer

from sayplan_core.envs import load_env
from sayplan_core.graph.model import Node
from sayplan_core.retrieval import EmbeddingError, EntityIndex, MiniLmEmbedder, default_embedder, make_embedder
from sayplan_core.retrieval.vector_store import FaissStore, NumpyStore


@pytest.fixture(scope="module")
def office_index() -> EntityIndex:
    index = EntityIndex(default_embedder())
    index.sync(load_env("office"))
    return index


def test_every_entity_is_a_document(office_index: EntityIndex) -> None:
    office = load_env("office")
    expected = {n for n in office.nodes if office.nodes[n].type in ("room", "asset", "object", "workspace")}
    assert set(office_index.documents) == expected
    doc = office_index.documents["coffee_mug"]
    assert doc.content == "coffee mug"
    assert doc.metadata["type"] == "object" and doc.metadata["room"] == "kitchen"
    assert doc.metadata["parent"] == "kitchen_cupboard" and doc.metadata["relation"] == "inside_of"


def test_semantic_search_finds_related_entities(office_index: EntityIndex) -> None:
    assert office_index.search("coffee mug", 1)[0].node_id == "coffee_mug"
    cutters = [h.node_id for h in office_index.search("something to cut paper with", 3, 0.3)]
    assert "scissors" in cutters
    # the threshold drops weak matches; metadata filters keep only what matches
    assert office_index.search("quantum chromodynamics", 5, 0.6) == []
    assert all(
        office_index.documents[h.node_id].metadata["type"] == "room"
        for h in office_index.search("kitchen", 3, where={"type": "room"})
    )
    closed = office_index.search("cupboard", 5, where={"states": "closed"})
    assert closed and all("closed" in office_index.documents[h.node_id].metadata["states"] for h in closed)


@pytest.mark.parametrize("store", ["faiss", "numpy"])
def test_incremental_updates_touch_only_what_changed(store: str) -> None:
    graph = load_env("office")
    index = EntityIndex(MiniLmEmbedder(), store)  # its own cache, so the counts below are this test's
    first = index.sync(graph)
    assert first.added == len(index) and first.removed == first.modified == 0
    assert index.sync(graph).__dict__ == {"added": 0, "modified": 0, "removed": 0, "embedded": 0}

    graph.set_parent("coffee_mug", "nikos_desk", "ontop_of")  # moved: metadata only, no re-embedding
    graph.remove_node("stapler")
    graph.add_node(Node("espresso_cup", "object", affordances=["pickup"]), "kitchen_bench", "ontop_of")
    graph.replace_node(
        replace(graph.nodes["banana1"], name="ripe plantain")
    )  # relabelled: re-embedded under the same id
    stats = index.sync(graph, changed=["coffee_mug", "stapler", "espresso_cup", "banana1"])
    assert (stats.added, stats.modified, stats.removed, stats.embedded) == (1, 2, 1, 2)
    assert "stapler" not in index.documents and index.documents["coffee_mug"].metadata["room"] == "nikos_office"
    assert all(h.node_id != "stapler" for h in index.search("stapler", 5))
    assert index.search("espresso cup", 1)[0].node_id == "espresso_cup"
    assert index.search("plantain", 1)[0].node_id == "banana1"
    # the incremental index answers exactly like one built from scratch
    fresh = EntityIndex(make_embedder("local"), store)
    fresh.sync(graph)
    for query in ("mug", "desk", "fruit", "printer"):
        assert index.search(query, 5) == fresh.search(query, 5)


def test_faiss_and_numpy_stores_agree() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = np.arange(500, dtype=np.int64) * 7
    stores = [FaissStore(16), NumpyStore(16)]
    for store in stores:
        store.add(ids, vectors)
        store.remove(ids[::3])
    query = vectors[[1, 2, 4]]
    (fs, fi), (ns, ni) = (s.search(query, 10) for s in stores)
    assert len(stores[0]) == len(stores[1]) == 500 - len(ids[::3])
    assert np.array_equal(fi, ni) and np.allclose(fs, ns, atol=1e-5)


def test_openai_embedding_endpoint(httpserver: HTTPServer) -> None:
    def answer(request: object) -> str:
        body = json.loads(request.get_data())  # type: ignore[attr-defined]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
            for i, t in enumerate(body["input"])
        ]
        return json.dumps(
            {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        )

    from werkzeug.wrappers import Response

    httpserver.expect_request("/v1/embeddings", method="POST").respond_with_handler(
        lambda r: Response(answer(r), content_type="application/json")
    )
    embedder = make_embedder("openai:text-embedding-3-small", base_url=httpserver.url_for("/v1"))
    rows = embedder.embed(["ab", "abcd", "ab"])
    assert rows.shape == (3, 3) and np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert np.allclose(rows[0], rows[2]) and not np.allclose(rows[0], rows[1])
    assert embedder.texts_embedded == 2  # the repeated text came from the cache
    assert len(httpserver.log) == 1


def test_ollama_embedding_endpoint_and_errors(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_json(
        {"model": "all-minilm", "embeddings": [[0.0, 3.0, 4.0]]}
    )
    embedder = make_embedder("ollama:all-minilm", base_url=httpserver.url_for(""))
    assert np.allclose(embedder.embed(["mug"]), [[0.0, 0.6, 0.8]])
    with pytest.raises(EmbeddingError, match="asked for 2 embeddings, got 1"):
        embedder.embed(["cup", "plate"])
    with pytest.raises(EmbeddingError, match="unknown embedder 'word2vec'"):
        make_embedder("word2vec")
    down = make_embedder("openai:m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(EmbeddingError, match="embedding request failed"):
        down.embed(["x"])
