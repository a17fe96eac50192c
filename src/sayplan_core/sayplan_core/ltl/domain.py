"""The planning domain of the ltl planner: where the robot can be, how it moves, and which propositions hold where.

This module is the one definition of the propositions, shared by the search, the
baseline and the planner's trace check.

Locations are the navigation nodes (rooms and poses) plus *stops*: the assets and
workspaces the robot can `access` (Dai et al.'s object level), each at its (x, y) and
the height of its room's node. The plan reaches a stop by accessing it, so every
move the search charges is a step the robot executes. The stops are:
- every asset or workspace the formula names;
- the support (nearest asset or workspace it rests on or in) of every object the
  formula names;
- for every object the formula names that lies directly in a room (the Stanford data
  has no support relations), every asset or workspace of its room within the reach
  distance of it. No action walks to a bare object, so with none of these it holds
  only at navigation nodes within the reach distance, or nowhere
  (`explain_unreachable` says why).
A stop is joined to its room's node and to the other stops of that room by
straight-line moves, so visiting objects costs the metric walk between their
supports; a stop is reached and left through the room's node.

Propositions, at a location l:
- room r: l is r's node, a pose inside r, or a stop in r (`enter(r)`);
- floor f: l is on floor f (its enclosing floor node);
- pose p: l is p;
- asset, object or workspace o (`reach(o)`): l is on o's floor and within
  `reach_distance` of o's extent, measured in the horizontal plane, or l is the
  stop of o itself or of o's support (accessing an asset reaches what rests on or
  in it, as in SayPlan). An object in the robot's hand holds everywhere.

An extent (`footprint`) is the axis-aligned rectangle the graph gives: the
attribute `bbox` ({"min": [x, y, z], "max": [x, y, z]}, as Hydra stores bounding
boxes), else `size` ([dx, dy, dz], full side lengths centred on the position, as the
Stanford 3D scene graph stores them), else the position itself; a malformed one
(not finite numbers, min above max, a negative size) is ignored. So a robot 0.8 m
from the edge of a 4 m table reaches it and what lies near that edge. A node with
no extent of its own uses the extent of the asset, workspace or object it rests on
or in, never a room's: a room's centre is not a place next to an object in it
(nor is an object's support found through its room, so an unplaced object lying
in a room is reached only by accessing it or nothing at all). `_stops_for` pairs an
object lying in a room with the room's assets and workspaces whose extents are
within the reach distance of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sayplan_core.graph.caches import Latest, PerHistory
from sayplan_core.graph.model import NAV_TYPES, SceneGraph, a_or_an
from sayplan_core.graph.text import GraphReader
from sayplan_core.ltl.vocabulary import ACCESS_TYPES, ATOM_TYPES, DEFAULT_REACH_DISTANCE, REACH_TYPES, DomainError
from sayplan_core.nav.path_planner import DEFAULT_EDGE_COST, nav_edge_costs
from sayplan_core.sim.plan import PlanStep

__all__ = ["ACCESS_TYPES", "ATOM_TYPES", "DEFAULT_REACH_DISTANCE", "REACH_TYPES", "DomainError", "SearchDomain"]


@dataclass(frozen=True)
class Footprint:
    """A node's extent in the horizontal plane: an axis-aligned rectangle (a point when it has no size)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def gap(self, x: float, y: float) -> float:
        """Horizontal distance from (x, y) to the rectangle (0 inside it)."""
        return math.hypot(max(self.x0 - x, 0.0, x - self.x1), max(self.y0 - y, 0.0, y - self.y1))

    def gap_to(self, other: Footprint) -> float:
        """Horizontal distance between the two rectangles (0 when they overlap)."""
        dx = max(other.x0 - self.x1, self.x0 - other.x1, 0.0)
        return math.hypot(dx, max(other.y0 - self.y1, self.y0 - other.y1, 0.0))


def _numbers(value: Any, count: int) -> list[float] | None:
    if not isinstance(value, (list, tuple)) or len(value) < count:
        return None
    head = value[:count]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in head):
        return None
    return [float(v) for v in head]


def own_footprint(graph: SceneGraph, node_id: str) -> Footprint | None:
    """The extent the node's own data gives (`bbox`, else `size` around its position, else its position)."""
    node = graph.nodes[node_id]
    bbox = node.attributes.get("bbox")
    if isinstance(bbox, Mapping):
        low, high = _numbers(bbox.get("min"), 2), _numbers(bbox.get("max"), 2)
        if low is not None and high is not None and low[0] <= high[0] and low[1] <= high[1]:
            return Footprint(low[0], low[1], high[0], high[1])
    if node.position is None:
        return None
    x, y = node.position[0], node.position[1]
    size = _numbers(node.attributes.get("size"), 2)
    hx, hy = (size[0] / 2, size[1] / 2) if size is not None and min(size) >= 0 else (0.0, 0.0)
    return Footprint(x - hx, y - hy, x + hx, y + hy)


def footprint(graph: SceneGraph, node_id: str) -> Footprint | None:
    """The node's extent, else that of the nearest asset, workspace or object it rests on or in; never a room's."""
    for item in [node_id, *graph.ancestors(node_id)]:
        if item != node_id and graph.nodes[item].type not in REACH_TYPES:
            return None
        box = own_footprint(graph, item)
        if box is not None:
            return box
    return None


@dataclass(frozen=True)
class Location:
    name: str  # the navigation node's id, or the id of the asset or workspace a stop is at
    is_stop: bool
    room: str | None
    floor: str | None
    position: tuple[float, float, float] | None


#: Every move as three arrays, (from, to, cost), each edge both ways: what a search over the moves reads at once.
EdgeArrays = tuple[np.ndarray, np.ndarray, np.ndarray]
#: The navigation part of a domain: locations, their index, the moves from each, and the same moves as arrays
#: (shared: never changed in place).
Navigation = tuple[tuple[Location, ...], dict[str, int], tuple[list[tuple[int, float]], ...], EdgeArrays]


def _nav_location(reader: GraphReader, node_id: str) -> Location:
    node = reader.nodes[node_id]
    room: str | None = node_id
    if node.type != "room":  # a pose: in the room it hangs under, if any (SceneGraph.room_of)
        parent = reader.parent(node_id)
        room = parent if parent is not None and reader.nodes[parent].type == "room" else None
    return Location(node_id, False, room, reader.enclosing(node_id, "floor"), node.position)


def _navigation(graph: SceneGraph) -> Navigation:
    """The navigation nodes as locations, and the moves between them. On a tracked graph (a planner node's
    snapshots) it is kept across versions while every navigation node keeps its change stamp: a location reads its
    node, its parent and the parent's parent (the floor of a pose in a room, whose room is itself a navigation
    node), and a move its two ends (connect and disconnect restamp both)."""
    stamps = graph.change_stamps
    ids = sorted(graph.nav.nodes)
    key: tuple[tuple[str, ...], tuple[int, ...]] | None = None
    if stamps is not None:
        key = (tuple(ids), tuple([stamps[n] for n in ids]))
        kept = _NAVIGATION.of(graph).value
        if kept is not None and kept[0] == key:
            navigation: Navigation = kept[1]
            return navigation
    reader = GraphReader(graph)  # one walk up per node for the floors of 10k navigation nodes
    locations = tuple(_nav_location(reader, n) for n in ids)
    index = {loc.name: i for i, loc in enumerate(locations)}
    moves: list[list[tuple[int, float]]] = [[] for _ in locations]
    ends: tuple[list[int], list[int], list[float]] = ([], [], [])
    for a, b, cost in nav_edge_costs(graph):
        i, j = index[a], index[b]
        moves[i].append((j, cost))
        moves[j].append((i, cost))
        ends[0].append(i)
        ends[1].append(j)
        ends[2].append(cost)
    froms, tos, costs = np.array(ends[0], dtype=np.intp), np.array(ends[1], dtype=np.intp), np.array(ends[2])
    arrays = (np.concatenate([froms, tos]), np.concatenate([tos, froms]), np.concatenate([costs, costs]))
    for array in arrays:
        array.flags.writeable = False
    navigation = (locations, index, tuple(moves), arrays)
    if key is not None:
        _NAVIGATION.of(graph).value = (key, navigation)  # one tuple: readers on other threads see all or none
    return navigation


class SearchDomain:
    """Locations (indices 0..n-1), weighted moves between them, and the atoms that hold at each."""

    def __init__(self, graph: SceneGraph, atoms: Iterable[str], reach_distance: float = DEFAULT_REACH_DISTANCE):
        if not (math.isfinite(reach_distance) and reach_distance >= 0):
            raise DomainError(f"reach_distance must be a finite number >= 0, got {reach_distance}")
        self.graph = graph
        self.reach_distance = reach_distance
        self.atoms = frozenset(atoms)
        for atom in sorted(self.atoms):
            node = graph.nodes.get(atom)
            if node is None:
                raise DomainError(f"'{atom}' is not a node of the scene graph")
            if node.type not in ATOM_TYPES:
                raise DomainError(
                    f"'{atom}' is {a_or_an(node.type)}; "
                    "propositions name rooms, poses, floors, assets, objects or workspaces"
                )
        locations, index, moves, self._nav_edges = _navigation(graph)
        self.locations: list[Location] = list(locations)
        self.index = dict(index)
        self.moves: list[list[tuple[int, float]]] = list(moves)  # shared lists: _add_stop replaces, never appends
        self._stop_edges: list[tuple[int, int, float]] = []  # the moves _add_stop adds, each once
        self._held = graph.held_object()
        self._by_room: dict[str, list[int]] = {}
        for target in sorted(a for a in self.atoms if graph.nodes[a].type in REACH_TYPES and a != self._held):
            for stop in self._stops_for(target):
                self._add_stop(stop)
        known = [loc.position for loc in self.locations]
        self.positions: np.ndarray | None = (
            np.asarray(known, dtype=float) if all(p is not None for p in known) else None
        )
        self.labels: list[frozenset[str]] = self._label_all()

    # ------------------------------------------------------------------ locations
    def _position(self, node_id: str) -> tuple[float, float, float] | None:
        for item in [node_id, *self.graph.ancestors(node_id)]:
            position = self.graph.nodes[item].position
            if position is not None:
                return position
        return None

    def _stops_for(self, target: str) -> list[str]:
        """The assets and workspaces whose access reaches `target` (see the module docstring)."""
        if self.graph.nodes[target].type != "object":
            return [target]
        support = self._support(target)
        if support is not None:
            return [support]
        room, extent = self.graph.room_of(target), own_footprint(self.graph, target)
        if room is None or extent is None:
            return []
        out = []
        for item in self.graph.descendants(room):
            if self.graph.nodes[item].type not in ACCESS_TYPES:
                continue
            box = own_footprint(self.graph, item)
            if box is not None and box.gap_to(extent) <= self.reach_distance:
                out.append(item)
        return sorted(out)

    def _add_stop(self, name: str) -> None:
        """A stop at the asset or workspace `name`, joined to its room's node and the room's other stops."""
        room = self.graph.room_of(name)
        if room is None or room not in self.index or name in self.index:
            return  # not in a room (reach(name) holds only where it is within reach distance), or already there
        hub = self.locations[self.index[room]]
        where = self._position(name)
        if where is not None and hub.position is not None:
            where = (where[0], where[1], hub.position[2])
        stop = Location(name, True, room, hub.floor, where)
        i = len(self.locations)
        self.locations.append(stop)
        self.index[name] = i
        self.moves.append([])
        for j in [self.index[room], *self._by_room.get(room, [])]:
            cost = self._straight(stop, self.locations[j])
            self.moves[i].append((j, cost))
            self.moves[j] = [*self.moves[j], (i, cost)]  # a new list: the navigation part's lists are shared
            self._stop_edges.append((i, j, cost))
        self._by_room.setdefault(room, []).append(i)

    def edge_arrays(self) -> EdgeArrays:
        """`moves` as (from, to, cost) arrays, each move both ways: the navigation part's kept with it, the stops'
        added."""
        froms, tos, costs = self._nav_edges
        if not self._stop_edges:
            return froms, tos, costs
        a, b, c = (np.array(column) for column in zip(*self._stop_edges, strict=True))
        return np.concatenate([froms, a, b]), np.concatenate([tos, b, a]), np.concatenate([costs, c, c])

    def explain_unreachable(self, atom: str) -> str:
        """Why `atom` holds at no location (call only for such an atom)."""
        node = self.graph.nodes[atom]
        if node.type != "object" or self._support(atom) is not None:
            return f"{atom} holds at no place the robot can go to"
        room = self.graph.room_of(atom)
        extent = footprint(self.graph, atom)
        where = f"lies directly in {room}" if room else "is in no room"
        if extent is None:
            return f"{atom} {where} and has no position, so no place the robot can go to is known to reach it"
        floor = self.graph.enclosing(atom, "floor")
        spots = [
            (extent.gap(loc.position[0], loc.position[1]), loc.name)
            for loc in self.locations
            if loc.floor == floor and loc.position is not None
        ]
        if room is not None:
            for d in self.graph.descendants(room):
                box = own_footprint(self.graph, d) if self.graph.nodes[d].type in ACCESS_TYPES else None
                if box is not None:
                    spots.append((box.gap_to(extent), d))
        nearest = f" (the nearest is {min(spots)[1]}, {min(spots)[0]:.1f} m away)" if spots else ""
        return (
            f"{atom} {where}, on no asset or workspace, and no room node, pose, asset or workspace the robot can go to "
            f"is within the reach distance ({self.reach_distance:g} m) of it{nearest}; raise the planner's "
            "reach_distance or add a pose near it"
        )

    def _support(self, node_id: str) -> str | None:
        for item in self.graph.ancestors(node_id):
            if self.graph.nodes[item].type in ACCESS_TYPES:
                return item
        return None

    @staticmethod
    def _straight(a: Location, b: Location) -> float:
        if a.position is None or b.position is None:
            return DEFAULT_EDGE_COST
        return math.dist(a.position, b.position)

    # ------------------------------------------------------------------ labels
    def _label_all(self) -> list[frozenset[str]]:
        """Each location's label; the many where no atom holds share one empty set (a label per location was
        most of a domain's allocations on a big building)."""
        found: dict[int, set[str]] = {}
        for atom in self.atoms:
            for i in self.where(atom):
                found.setdefault(i, set()).add(atom)
        labels: list[frozenset[str]] = [frozenset()] * len(self.locations)
        for i, atoms in found.items():
            labels[i] = frozenset(atoms)
        return labels

    def where(self, atom: str) -> list[int]:
        """The locations at which `atom` holds."""
        node = self.graph.nodes[atom]
        locations = self.locations
        if node.type == "pose":
            return [self.index[atom]] if atom in self.index else []
        if node.type == "room":
            return [i for i, loc in enumerate(locations) if loc.room == atom]
        if node.type == "floor":
            return [i for i, loc in enumerate(locations) if loc.floor == atom]
        if atom == self._held:
            return list(range(len(locations)))
        out = {self.index[s] for s in self._stops_for(atom) if s in self.index}
        extent = footprint(self.graph, atom)
        if extent is not None:
            floor = self.graph.enclosing(atom, "floor")
            for i, loc in enumerate(locations):
                p = loc.position
                if p is not None and loc.floor == floor and extent.gap(p[0], p[1]) <= self.reach_distance:
                    out.add(i)
        return sorted(out)

    # ------------------------------------------------------------------ output
    def names(self, path: list[int]) -> list[str]:
        return [self.locations[i].name for i in path]

    def plan_steps(self, path: list[int]) -> list[PlanStep]:
        """The sayplan actions that walk `path`: goto for navigation nodes, access for stops, then done."""
        steps = [PlanStep("access" if self.locations[i].is_stop else "goto", self.locations[i].name) for i in path[1:]]
        return [*steps, PlanStep("done", "")]

    def location_of(self, node_id: str) -> int:
        """The location of a navigation node (a start position)."""
        if node_id not in self.graph.nodes or self.graph.nodes[node_id].type not in NAV_TYPES:
            raise DomainError(f"'{node_id}' is not a room or pose node, so the robot cannot start there")
        return self.index[node_id]


#: The navigation of the last version read, with its key, per history of tracked graphs (graph/caches.py).
_NAVIGATION: PerHistory[Latest[tuple[tuple[tuple[str, ...], tuple[int, ...]], Navigation]]] = PerHistory(
    "ltl navigation", Latest
)
