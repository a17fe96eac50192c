"""Seeded generator of large multi-floor buildings for scale tests and benchmarks.

Each floor is a corridor of pose nodes with rooms on both sides; floors are joined
by a staircase pose. Rooms get assets, assets get objects (some in closed
containers), so the same simulator rules apply as in the hand-written envs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import pairwise

from sayplan_core.graph.model import Node, SceneGraph

ROOM_KINDS = ("office", "meeting_room", "kitchen", "lab", "storage", "bathroom", "lounge")
ASSET_KINDS = (("desk", False), ("shelf", False), ("cabinet", True), ("table", False), ("fridge", True))
OBJECT_KINDS = ("mug", "book", "apple", "laptop", "stapler", "bottle", "plate", "pen", "box", "phone")
ROOM_SPACING = 6.0
FLOOR_HEIGHT = 3.0


@dataclass(frozen=True)
class BuildingSpec:
    floors: int = 2
    rooms_per_floor: int = 20
    assets_per_room: int = 3
    objects_per_asset: int = 2
    seed: int = 0


def spec_for_size(total_nodes: int, seed: int = 0) -> BuildingSpec:
    """A spec whose graph has about `total_nodes` nodes (rooms of 3 assets x 2 objects)."""
    per_room = 1 + 3 * 3 + 0.5
    rooms = max(2, round(total_nodes / per_room))
    floors = max(1, min(10, rooms // 40))
    return BuildingSpec(floors=floors, rooms_per_floor=max(2, rooms // floors), seed=seed)


def generate_building(spec: BuildingSpec) -> SceneGraph:
    rng = random.Random(spec.seed)
    g = SceneGraph(f"building_f{spec.floors}_r{spec.rooms_per_floor}_s{spec.seed}")
    stairs: list[str] = []
    for f in range(spec.floors):
        floor_id = f"floor{f}"
        z = f * FLOOR_HEIGHT
        g.add_node(Node(floor_id, "floor"))
        prev_pose: str | None = None
        for r in range(spec.rooms_per_floor):
            x = (r // 2) * ROOM_SPACING
            side = 1 if r % 2 == 0 else -1
            if r % 2 == 0:
                pose_id = f"pose_f{f}_{r // 2}"
                g.add_node(Node(pose_id, "pose", position=(x, 0.0, z)), floor_id)
                if prev_pose is not None:
                    g.connect(prev_pose, pose_id)
                prev_pose = pose_id
            assert prev_pose is not None
            kind = ROOM_KINDS[rng.randrange(len(ROOM_KINDS))]
            room_id = f"{kind}_f{f}_{r}"
            g.add_node(Node(room_id, "room", position=(x, side * 4.0, z)), floor_id)
            g.connect(room_id, prev_pose)
            for a in range(spec.assets_per_room):
                asset_kind, container = ASSET_KINDS[rng.randrange(len(ASSET_KINDS))]
                asset_id = f"{asset_kind}_f{f}_{r}_{a}"
                g.add_node(
                    Node(
                        asset_id,
                        "asset",
                        states=["closed"] if container else [],
                        affordances=["open", "close", "release"] if container else ["release"],
                        position=(x + a * 0.8, side * 5.0, z),
                    ),
                    room_id,
                )
                for o in range(spec.objects_per_asset):
                    obj_kind = OBJECT_KINDS[rng.randrange(len(OBJECT_KINDS))]
                    obj_id = f"{obj_kind}_f{f}_{r}_{a}_{o}"
                    g.add_node(
                        Node(obj_id, "object", affordances=["pickup"], position=(x + a * 0.8, side * 5.0, z + 0.8)),
                        asset_id,
                        "inside_of" if container else "ontop_of",
                    )
        stair_id = f"stairs_f{f}"
        g.add_node(Node(stair_id, "pose", position=(-ROOM_SPACING, 0.0, z)), floor_id)
        g.connect(stair_id, f"pose_f{f}_0")
        stairs.append(stair_id)
    for lower, upper in pairwise(stairs):
        g.connect(lower, upper, weight=FLOOR_HEIGHT * 2)
    g.add_node(Node("agent", "agent", attributes={"location": "stairs_f0"}))
    return g


DISTRACTOR_KINDS = (
    "pencil", "notebook", "charger", "headphones", "sticky_notes", "water_bottle", "tissue_box", "ruler", "eraser",
    "keyboard", "mouse", "usb_stick", "calculator", "envelope", "folder", "tape", "glue_stick", "marker", "clipboard",
    "plant_pot", "candle", "remote_control", "sunscreen", "umbrella", "hat", "scarf", "glove", "toy_car", "puzzle",
    "magazine", "photo_frame", "vase", "coaster", "napkin", "spoon", "fork", "bowl", "teapot", "jar", "sponge",
)  # fmt: skip


def add_distractors(graph: SceneGraph, count: int, seed: int = 0) -> SceneGraph:
    """A copy of `graph` with `count` task-irrelevant objects on or in its assets (EmbodiedRAG's setting)."""
    rng = random.Random(seed)
    out = graph.copy()
    assets = sorted(out.ids_of_type("asset"))
    if not assets:
        raise ValueError("the graph has no assets to put distractor objects on")
    for i in range(count):
        kind = DISTRACTOR_KINDS[rng.randrange(len(DISTRACTOR_KINDS))]
        asset = assets[rng.randrange(len(assets))]
        inside = "closed" in out.nodes[asset].states or "open" in out.nodes[asset].states
        position = out.nodes[asset].position
        out.add_node(
            Node(f"{kind}_d{i}", "object", affordances=["pickup"], position=position),
            asset,
            "inside_of" if inside else "ontop_of",
        )
    return out
