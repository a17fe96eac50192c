"""Links an importer invents when the data has no room connectivity, and the rule that keeps them honest.

One hallway pose per floor joined to each room of the floor, every such pose marked synthetic and every link
counted (`Builder.synthetic_links`), so `sayplan env import` can say so loudly. Floors meet only through a staircase
or elevator room the data places on both (`Builder.also_on`): never staircase to staircase, never hallway to
hallway. Floors nothing joins stay apart, and the notes name them with their staircase rooms.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

#: How many ids a note lists before it stops.
_SHOWN = 20
_FLOOR_LINKS = re.compile(r"stair|elevator|(?:^|_)lift", re.IGNORECASE)
#: The attributes of a node an importer invents (the hallway pose of a graph without connectivity).
SYNTHETIC_MARK = {"synthetic": "added by the importer: the data has no room connectivity"}


class Draft(Protocol):
    """What `invent` reads and writes of an importer's draft (`common.Builder`, which calls it)."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    types: dict[str, str]
    notes: list[str]
    also_on: dict[str, list[str]]
    invented: set[str]
    synthetic_links: int
    apart_floors: list[list[str]]

    def node(self, node_id: str, node_type: str, **fields: Any) -> dict[str, Any] | None: ...

    def child(self, child: str, relation: str, parent: str) -> None: ...

    def link(self, a: str, b: str, weight: float | None = None) -> None: ...

    def parents(self) -> dict[str, tuple[str, str]]: ...


def joins_floors(room_id: str) -> bool:
    """A room that can join floors (a staircase, an elevator or a lift), by its id."""
    return bool(_FLOOR_LINKS.search(room_id))


def invent(b: Draft) -> None:
    """The data has no room links: one hallway pose per floor (marked synthetic) joined to each room of the
    floor. Floors are joined only through a staircase or elevator room the data places on both (`also_on`):
    never staircase to staircase, never hallway to hallway; floors nothing joins stay apart, and a note says so."""
    parents = b.parents()
    floors: dict[str, list[str]] = {}
    for node_id, node_type in b.types.items():
        if node_type == "room":
            parent = parents.get(node_id, ("", ""))[0]
            floor = parent if b.types.get(parent) == "floor" else ""
            floors.setdefault(floor, []).append(node_id)
    if not floors:
        return
    positions = {n["id"]: n.get("position") for n in b.nodes}
    hubs: dict[str, str] = {}
    before = sum(e["relation"] == "connected_to" for e in b.edges)
    for floor, rooms in sorted(floors.items()):
        hub = f"hall_{floor}" if floor else "hall"
        while hub in b.types:
            hub += "_"
        xs = [p for p in (positions.get(r) for r in rooms) if isinstance(p, list) and len(p) == 3]
        centre = [sum(float(v[i]) for v in xs) / len(xs) for i in range(3)] if xs else None
        b.node(
            hub,
            "pose",
            name=f"hallway of {floor or 'the building'}",
            position=centre,
            attributes=dict(SYNTHETIC_MARK),
        )
        b.invented.add(hub)
        if floor:
            b.child(hub, "in", floor)
        for room in rooms:
            b.link(room, hub)
        hubs[floor] = hub
    group = {floor: floor for floor in hubs}  # floors joined so far (union-find)

    def root(floor: str) -> str:
        while group[floor] != floor:
            floor = group[floor]
        return floor

    stairs, ignored = [], []
    for room, extra in sorted(b.also_on.items()):
        own = parents.get(room, ("", ""))[0]
        others = sorted({f for f in extra if f in hubs and f != own})
        if b.types.get(room) != "room" or own not in hubs or not others:
            continue
        if not joins_floors(room):
            ignored.append(room)
            continue
        for floor in others:
            b.link(room, hubs[floor])
            group[root(floor)] = root(own)
        item = next(n for n in b.nodes if n["id"] == room)
        item.setdefault("attributes", {})["joins_floors"] = sorted([own, *others])
        stairs.append(room)
    b.synthetic_links = sum(e["relation"] == "connected_to" for e in b.edges) - before
    note = (
        f"no room connectivity in the data: added {len(hubs)} hallway pose(s) joining every room of its floor "
        f"({b.synthetic_links} synthetic link(s))"
    )
    if stairs:
        note += f", floors joined through staircase/elevator room(s) on both: {', '.join(stairs)}"
    if ignored:
        note += "; room(s) on several floors but no staircase or elevator, linked on their own floor: "
        note += ", ".join(ignored)
    apart: dict[str, list[str]] = {}
    for floor in sorted(hubs):
        apart.setdefault(root(floor), []).append(floor or "(no floor)")
    b.apart_floors = [sorted(floors_) for floors_ in apart.values()] if len(apart) > 1 else []
    if b.apart_floors:
        shown = " | ".join(", ".join(g) for g in b.apart_floors)
        note += f"; floors left unlinked (no staircase or elevator room the data places on two of them): {shown}"
        candidates = [
            f"{room} ({floor})" for floor, rooms in sorted(floors.items()) for room in rooms if joins_floors(room)
        ]
        if candidates:  # what a connectivity file would most likely join
            shown = ", ".join(candidates[:_SHOWN])
            note += f"; staircase/elevator rooms on one floor each, to link in a --connectivity file: {shown}"
    b.notes.append(note + "; --connectivity FILE loads real doors")
