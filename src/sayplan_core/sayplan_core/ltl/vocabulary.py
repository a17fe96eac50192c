"""The words of an LTL mission's domain that a planner declares before it searches: which node types a proposition
may name, how far the robot reaches, and the error for a proposition that names no usable node.

Apart from `domain.py` (numpy) so that declaring the ltl planner's options loads no numpy.
"""

from __future__ import annotations

DEFAULT_REACH_DISTANCE = 1.0  # metres, horizontal
ACCESS_TYPES = frozenset({"asset", "workspace"})  # what `access` walks up to
REACH_TYPES = ACCESS_TYPES | {"object"}
ATOM_TYPES = frozenset({"room", "pose", "floor"}) | REACH_TYPES


class DomainError(ValueError):
    """A proposition that names no usable node of the scene graph."""
