"""LookPlanGraph-style graph augmentation: a VLM looks on or into an asset and names new objects.

The image goes to any LLM backend with vision (OpenAI-compatible or Ollama) through
the same session as the planners (budget, retries, answer validation). The answer
becomes a GraphUpdate: new object nodes on / in the asset, skipping objects the
graph already holds there. `reveal_hook` plugs it into the simulator's look_on /
look_inside effect, so a LookPlanGraph planner on a robot grows its memory graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_update
from sayplan_core.llm.session import BadAnswerError, Budget, LlmSession
from sayplan_core.llm.types import LlmBackend
from sayplan_core.sim.world_state import RevealHook, WorldState

RELATIONS = ("ontop_of", "inside_of")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "objects": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "states": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name", "states"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["objects"],
    "additionalProperties": False,
}
SYSTEM = (
    "You describe what a robot's camera sees on or inside one piece of furniture. List each movable object you can "
    "see there that is not in the list of known objects, with a short lowercase name (e.g. 'coffee mug') and its "
    "states if any (open, closed, on, off, dirty, ...). Answer with JSON: "
    '{"objects": [{"name": "...", "states": []}]}. List nothing you are not sure of.'
)
ImageSource = Callable[[str, str], bytes]  # (asset id, relation) -> image


def _slug(name: str) -> str:
    return "_".join(name.lower().split()) or "object"


class VlmAugmenter:
    def __init__(self, backend: LlmBackend, budget: Budget | None = None) -> None:
        self.backend = backend
        self.budget = budget or Budget(max_calls=4)
        self.calls = 0

    def look(self, graph: SceneGraph, asset_id: str, relation: str, image: bytes) -> GraphUpdate:
        if relation not in RELATIONS:
            raise ValueError(f"relation must be ontop_of or inside_of, got '{relation}'")
        asset = graph.node(asset_id)
        known = [graph.nodes[c].name for c in graph.children(asset_id)]
        where = "on top of" if relation == "ontop_of" else "inside"
        user = (
            f"The image shows what is {where} the {asset.name} ({asset_id}). "
            f"Known objects there: {', '.join(known) if known else 'none'}."
        )
        session = LlmSession(self.backend, self.budget)

        def validate(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
            items = data.get("objects")
            if not isinstance(items, list):
                raise BadAnswerError("'objects' must be a list")
            out = []
            for index, item in enumerate(items):
                name = item.get("name") if isinstance(item, dict) else None
                states = item.get("states", []) if isinstance(item, dict) else None
                if not isinstance(name, str) or not name.strip():
                    raise BadAnswerError(f"objects[{index}] needs a non-empty 'name'")
                if not isinstance(states, list) or not all(isinstance(s, str) for s in states):
                    raise BadAnswerError(f"objects[{index}].states must be a list of strings")
                out.append((name.strip().lower(), [s.strip().lower() for s in states if s.strip()]))
            return out

        found = session.ask(
            "look",
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            SCHEMA,
            validate,
            "look",
            images=(image,),
        )
        self.calls += len(session.calls)
        update = GraphUpdate(source="vlm")
        taken = set(graph.nodes)
        known_names = set(known)
        for name, states in found:
            if name in known_names:
                continue
            known_names.add(name)
            index = 1
            while f"{_slug(name)}_{index}" in taken:
                index += 1
            node_id = f"{_slug(name)}_{index}"
            taken.add(node_id)
            node = Node(node_id, "object", name=name, states=states, affordances=["pickup"], position=asset.position)
            update.upsert.append(NodeUpsert(node, asset_id, relation))
        return update

    def reveal_hook(self, images: ImageSource) -> RevealHook:
        """A simulator hook: look_on / look_inside ask the VLM and add what it sees to the state's graph."""

        def hook(state: WorldState, asset: str, relation: str) -> list[str]:
            update = self.look(state.graph, asset, relation, images(asset, relation))
            if not update.is_empty():
                state.graph = apply_update(state.graph, update)
            return [u.node.id for u in update.upsert]

        return hook
