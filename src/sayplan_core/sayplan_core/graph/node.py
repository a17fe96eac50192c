"""A scene-graph node: an immutable record (frozen, slotted dataclass), the types and relations it may have, and the
rules for placing one under another. The graph that holds nodes is graph/model.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from sayplan_core.closest import close_names
from sayplan_core.graph import limits

NODE_TYPES: tuple[str, ...] = ("building", "floor", "room", "pose", "workspace", "asset", "object", "agent")

#: Types that form the navigation layer (goto targets).
NAV_TYPES: frozenset[str] = frozenset({"room", "pose"})

#: Relation of a node to its hierarchy parent.
CONTAINMENT_RELATIONS: frozenset[str] = frozenset({"ontop_of", "inside_of", "inside_hand"})
HIERARCHY_RELATIONS: frozenset[str] = frozenset({"in"}) | CONTAINMENT_RELATIONS
NAV_RELATION = "connected_to"

#: Which parent types each node type may hang under.
ALLOWED_PARENTS: dict[str, frozenset[str]] = {
    "building": frozenset(),
    "floor": frozenset({"building"}),
    "room": frozenset({"floor", "building"}),
    "pose": frozenset({"floor", "room", "building"}),
    "workspace": frozenset({"room"}),
    "asset": frozenset({"room", "workspace"}),
    "object": frozenset({"asset", "workspace", "room", "object", "agent"}),
    "agent": frozenset(),
}

#: States that exclude each other; setting one removes the others of its group.
EXCLUSIVE_STATES: tuple[frozenset[str], ...] = (
    frozenset({"open", "closed"}),
    frozenset({"on", "off"}),
    frozenset({"locked", "unlocked"}),
)

Position = tuple[float, float, float]


class GraphError(ValueError):
    """A scene graph operation or file was invalid; `node_id` names the culprit."""

    def __init__(self, message: str, node_id: str | None = None) -> None:
        super().__init__(message)
        self.node_id = node_id


class UnknownNodeError(GraphError, KeyError):
    """A node id that is not in the graph, with the closest existing ids."""

    def __init__(self, node_id: str, candidates: Iterable[str] = ()) -> None:
        # an id no node can have (over limits.MAX_ID_CHARS) gets no hint: comparing it costs its length
        close = close_names(node_id, candidates, 1) if len(node_id) <= limits.MAX_ID_CHARS else []
        hint = f"; did you mean '{close[0]}'?" if close else ""
        super().__init__(f"node '{limits.shown(node_id, limits.MAX_ID_CHARS)}' does not exist{hint}", node_id)
        self.suggestion = close[0] if close else None

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class Attributes(dict[str, Any]):
    """A node's attributes: a dict that refuses changes (a node is immutable; SceneGraph.replace_node changes it).

    A dict, so JSON writers, `==` and `{**attributes}` treat it as one; `copy()` and `|` give a plain dict to edit.
    Nested values (JSON lists and objects) are the caller's: never edit them in place.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a node's attributes are read-only: build a new node (dataclasses.replace) and replace it")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy would refill it through __setitem__
        return Attributes, (dict(self),)


#: The attributes of every node that has none (loaders share it: it cannot change).
NO_ATTRIBUTES = Attributes()


@dataclass(frozen=True, slots=True, init=False)
class Node:
    """One scene-graph entity, immutable: a change is a new node (`dataclasses.replace`) put into the graph by a
    SceneGraph mutator (replace_node, set_states), which stamps it. Hierarchy and navigation edges live in
    SceneGraph. Lists given for states and affordances become tuples, a dict of attributes an `Attributes` copy.

    Slots: a loader builds one per node (docs/concepts/graph_loading.md). `__init__`, `with_states` and
    `prechecked_nodes` fill a mutable twin with the same slots (`_Draft`), then set its class.
    """

    id: str
    type: str
    name: str
    states: tuple[str, ...]
    affordances: tuple[str, ...]
    attributes: Mapping[str, Any]
    position: Position | None
    __hash__ = None  # type: ignore[assignment]  # attributes are a dict

    def __init__(
        self,
        id: str,  # the field's name
        type: str,
        name: str = "",
        states: tuple[str, ...] | list[str] = (),
        affordances: tuple[str, ...] | list[str] = (),
        attributes: Mapping[str, Any] | None = None,
        position: Position | None = None,
    ) -> None:
        _set(self, "__class__", _Draft)  # filled as its mutable twin: a third of the cost of _set per field
        draft: Any = self
        draft.id, draft.type = id, type
        draft.name = name or (id.replace("_", " ") if isinstance(id, str) else name)
        draft.states = tuple(states) if states.__class__ is list else states  # anything else: check() says
        draft.affordances = tuple(affordances) if affordances.__class__ is list else affordances
        kind = attributes.__class__
        if kind is dict:
            attributes = Attributes(attributes) if attributes else NO_ATTRIBUTES
        elif attributes is None:
            attributes = NO_ATTRIBUTES
        elif kind is not Attributes and isinstance(attributes, Mapping):
            attributes = Attributes(attributes)
        draft.attributes, draft.position = attributes, position
        draft.__class__ = Node
        self.check()

    def with_states(self, states: Iterable[str]) -> Node:
        """This node in other states, only they checked (the other fields passed check() already)."""
        labels = tuple(states)
        try:
            check_labels("states", labels)
        except limits.InputLimitError as exc:
            raise GraphError(f"node '{self.id}': {exc}", self.id) from None
        draft: Any = object.__new__(_Draft)
        draft.id, draft.type, draft.name, draft.states = self.id, self.type, self.name, labels
        draft.affordances, draft.attributes, draft.position = self.affordances, self.attributes, self.position
        draft.__class__ = Node
        return draft  # type: ignore[no-any-return]

    def check(self) -> None:
        """The rules a node obeys on its own; run again on nodes that arrive in updates (a nested attribute value
        may have been changed after construction)."""
        if not isinstance(self.id, str) or not self.id.strip():
            raise GraphError(f"node id must be a non-empty string, got {self.id!r:.80}")
        if len(self.id) > limits.MAX_ID_CHARS:
            raise GraphError(f"node id '{self.id[:40]}...' is over {limits.MAX_ID_CHARS} characters", self.id[:40])
        if not limits.unicode_text(self.id):
            raise GraphError(f"node id {self.id!r:.80} holds a lone surrogate (not text UTF-8 can carry)")
        if self.type not in NODE_TYPES:
            raise GraphError(
                f"node '{self.id}' has unknown type '{self.type}' (expected one of {', '.join(NODE_TYPES)})",
                self.id,
            )
        if self.position is not None and (
            len(self.position) != 3 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in self.position)
        ):
            raise GraphError(f"node '{self.id}': position must be finite, got {self.position!r}", self.id)
        try:
            self._check_sizes()
        except limits.InputLimitError as exc:
            raise GraphError(f"node '{self.id}': {exc}", self.id) from None

    def _check_sizes(self) -> None:
        """Bounded fields, so nothing later (copies, messages, prompts) recurses or grows without limit."""
        if not isinstance(self.name, str):
            raise limits.InputLimitError(f"name must be a string, got {type(self.name).__name__}")
        limits.check_chars(self.name, limits.MAX_NAME_CHARS, "name")
        check_labels("states", self.states)
        check_labels("affordances", self.affordances)
        if not isinstance(self.attributes, dict):
            raise limits.InputLimitError(f"attributes must be an object, got {type(self.attributes).__name__}")
        limits.check_count(len(self.attributes), limits.MAX_ATTRIBUTES, "attributes")
        for key, value in self.attributes.items():
            if not isinstance(key, str):
                raise limits.InputLimitError(f"attribute names must be strings, got {type(key).__name__}")
            limits.check_chars(key, limits.MAX_ID_CHARS, "an attribute name")
            limits.check_json_value(value, f"attribute '{key}'")


_set = object.__setattr__  # past the freeze


class _Draft:
    """Node's slots without the freeze, filled by plain assignment and then made a Node (`draft.__class__ = Node`:
    the layouts match). Setting each frozen slot through object.__setattr__ cost three times as much.
    """

    __slots__ = ("affordances", "attributes", "id", "name", "position", "states", "type")


def check_labels(what: str, labels: object) -> None:
    """States or affordances: a tuple of bounded strings (limits.InputLimitError otherwise)."""
    if not isinstance(labels, tuple) or not all(isinstance(v, str) for v in labels):
        raise limits.InputLimitError(f"{what} must be a list of strings")
    limits.check_count(len(labels), limits.MAX_LABELS, what)
    for label in labels:
        limits.check_chars(label, limits.MAX_ID_CHARS, f"a {what[:-1]}")


def a_or_an(word: str) -> str:
    """The word with its indefinite article, for messages that name a node type ("an asset", "a room")."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def check_parent(node: Node, parent: Node, relation: str) -> None:
    """Raise GraphError when `node` may not hang under `parent` with `relation`."""
    allowed = ALLOWED_PARENTS[node.type]
    if parent.type not in allowed:
        expected = ", ".join(sorted(allowed)) or "nothing (it is a top-level node)"
        raise GraphError(
            f"node '{node.id}' ({node.type}) cannot be placed under '{parent.id}' ({parent.type}); "
            f"a {node.type} belongs under: {expected}",
            node.id,
        )
    if relation not in HIERARCHY_RELATIONS:
        raise GraphError(f"node '{node.id}' has unknown relation '{relation}' to '{parent.id}'", node.id)
    if node.type == "object":
        if relation not in CONTAINMENT_RELATIONS and parent.type != "room":
            raise GraphError(
                f"object '{node.id}' must be ontop_of, inside_of or inside_hand its parent '{parent.id}', "
                f"not '{relation}'",
                node.id,
            )
        if (relation == "inside_hand") != (parent.type == "agent"):
            raise GraphError(f"object '{node.id}': inside_hand is the relation to the agent and only to it", node.id)
    elif relation != "in":
        raise GraphError(f"node '{node.id}' ({node.type}) can only be 'in' its parent, not '{relation}'", node.id)


def _placements() -> frozenset[tuple[str, str, str]]:
    """Every (child type, parent type, relation) that check_parent accepts, derived from it (so one rule)."""
    out: set[tuple[str, str, str]] = set()
    for child in NODE_TYPES:
        for parent in NODE_TYPES:
            for relation in HIERARCHY_RELATIONS:
                try:
                    check_parent(Node("child", child), Node("parent", parent), relation)
                except GraphError:
                    continue
                out.add((child, parent, relation))
    return frozenset(out)


#: (child type, parent type, relation) triples a hierarchy edge may have; bulk loaders check a whole file's at once.
PLACEMENTS: frozenset[tuple[str, str, str]] = _placements()


def _nesting() -> frozenset[tuple[str, str]]:
    """(child type, parent type) pairs of PLACEMENTS that lie on a cycle of types: only hierarchy edges of these
    pairs can close a cycle of nodes (today: objects in objects), so a loader walks for cycles only if it has one."""
    under = nx.DiGraph((child, parent) for child, parent, _ in PLACEMENTS)
    group = {t: i for i, members in enumerate(nx.strongly_connected_components(under)) for t in members}
    return frozenset((c, p) for c, p in under.edges if group[c] == group[p])


NESTING: frozenset[tuple[str, str]] = _nesting()


def prechecked_nodes(
    rows: Iterable[tuple[str, str, str, tuple[str, ...], tuple[str, ...], Position | None]],
) -> list[Node]:
    """Nodes from (id, type, name, states, affordances, position) rows without Node.check, with no attributes.

    Only for a loader that has already checked every field of every row against the rules of Node.check (see
    native_format's bulk path): running check() once per node was half of loading a large graph.
    """
    new = object.__new__
    nodes: list[Node] = []
    append = nodes.append
    for node_id, node_type, name, states, affordances, position in rows:
        node: Any = new(_Draft)
        node.id = node_id
        node.type = node_type
        node.name = name
        node.states = states
        node.affordances = affordances
        node.attributes = NO_ATTRIBUTES
        node.position = position
        node.__class__ = Node
        append(node)
    return nodes


def with_state(states: Iterable[str], new_state: str) -> list[str]:
    """Set a state, dropping the states it excludes (open removes closed)."""
    out = list(states)
    for group in EXCLUSIVE_STATES:
        if new_state in group:
            out = [s for s in out if s not in group]
    if new_state not in out:
        out.append(new_state)
    return out
