"""Perception's graph updates against a graph server that is not perception's alone, over a view that lags.

Each example plays a random history: objects appear, move, vanish and change their most frequent label
(asset <-> object) in the map; the mapper sees the graph some versions late; updates are lost on the way or
refused by the real `apply_update`; a skill puts things on perceived assets and takes them away. Then the
view catches up. Oracle, written from what the graph must hold rather than from the mapper: every mapped object
in a room is a node with its label and place (room by the region test below), every other node perception made
is gone unless it still holds something perception did not put there, and perception stops sending anything.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_update
from sayplan_core.perception.fusion import MapObject
from sayplan_core.perception.structure import SceneGraphMapper, StructureConfig

REGIONS = {"kitchen": ((0.0, 0.0), (5.0, 5.0)), "office": ((5.0, 0.0), (10.0, 5.0))}
LABELS = ["table", "cabinet", "mug", "book", "box"]  # table and cabinet are asset labels


def room_of(center: np.ndarray) -> str:
    """The region that holds the centre, else the region whose middle is nearest (its room node is there)."""
    for room, ((x0, y0), (x1, y1)) in REGIONS.items():
        if x0 <= center[0] <= x1 and y0 <= center[1] <= y1:
            return room
    middle = {room: ((x0 + x1) / 2, (y0 + y1) / 2) for room, ((x0, y0), (x1, y1)) in REGIONS.items()}
    return min(middle, key=lambda room: np.hypot(center[0] - middle[room][0], center[1] - middle[room][1]))


def make_object(object_id: str, label: str, rng: random.Random) -> MapObject:
    x, y = rng.uniform(-1.0, 11.0), rng.uniform(0.5, 4.5)  # some outside every room
    lo, hi = (x, y, rng.choice([0.0, 0.75])), (x + rng.uniform(0.1, 1.2), y + rng.uniform(0.1, 1.0), 0.0)
    hi = (hi[0], hi[1], lo[2] + rng.uniform(0.1, 0.9))
    grid = np.stack(np.meshgrid(*[np.linspace(a, b, 3) for a, b in zip(lo, hi, strict=True)]), -1).reshape(-1, 3)
    return MapObject(object_id, grid, Counter({label: 3}), 3)


def play(seed: int, steps: int) -> tuple[SceneGraph, SceneGraphMapper, set[str]]:
    rng = random.Random(seed)
    start = SceneGraph("perceived")
    start.add_node(Node("floor1", "floor"))
    versions = [start]
    mapper = SceneGraphMapper(config=StructureConfig(room_regions=REGIONS))
    made: set[str] = set()  # every id perception ever put in the map
    foreign = 0
    for _ in range(steps):
        objects = mapper.map.objects
        change = rng.random()
        if change < 0.35 or not objects:
            new = f"{rng.choice(LABELS)}_{len(made)}"
            objects[new] = make_object(new, new.split("_")[0], rng)
            made.add(new)
        elif change < 0.55:
            del objects[rng.choice(sorted(objects))]
        elif change < 0.75:
            moved = rng.choice(sorted(objects))
            objects[moved] = make_object(moved, objects[moved].label, rng)
        else:  # the most frequent label changes, maybe across asset and object labels
            flipped = rng.choice(sorted(objects))
            objects[flipped].labels[rng.choice(LABELS)] += 10
        seen = versions[max(0, len(versions) - 1 - rng.randint(0, 3))]
        update = mapper.update_for(seen)
        fate = rng.random()
        if fate < 0.15:
            mapper.not_applied(update)  # lost on the way
        else:
            try:
                versions.append(apply_update(versions[-1], update))
            except GraphError:
                mapper.not_applied(update)  # refused
        current = versions[-1]
        if rng.random() < 0.3:  # a skill: put something on a perceived asset, or take something away
            assets = sorted(n.id for n in current.iter_nodes("asset"))
            mine = sorted(n.id for n in current.iter_nodes("object") if n.id.startswith("skill_"))
            if assets and (not mine or rng.random() < 0.6):
                foreign += 1
                item = NodeUpsert(Node(f"skill_{foreign}", "object", name="mug"), rng.choice(assets), "ontop_of")
                versions.append(apply_update(current, GraphUpdate(upsert=[item])))
            elif mine:
                versions.append(apply_update(current, GraphUpdate(remove=[rng.choice(mine)])))
    graph = versions[-1]
    for _ in range(2):  # the view catches up (the rooms first); nothing is lost any more
        graph = apply_update(graph, mapper.update_for(graph))
    return graph, mapper, made


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 30))
def test_perception_converges_on_what_the_map_holds(seed: int, steps: int) -> None:
    graph, mapper, made = play(seed, steps)
    assert mapper.update_for(graph).is_empty()  # nothing left to send: no update refused for ever
    expected = {i for i, o in mapper.map.objects.items() if room_of(o.box.center)}
    present = {i for i in made if i in graph}
    assert expected <= present
    for node_id in expected:
        node, obj = graph.nodes[node_id], mapper.map.objects[node_id]
        assert node.name == obj.label and node.position is not None
        assert np.allclose(node.position, obj.box.center)
        assert graph.room_of(node_id) == room_of(obj.box.center)
    for node_id in present - expected:  # kept only while it holds what a skill put there
        assert [c for c in graph.children(node_id) if c not in made], f"{node_id} left in the graph"
