"""The detector labels perception files as assets (immovable: tables, shelves) and as containers (assets whose
inside holds objects), by default. Their own module, free of numpy and scipy, because node settings read them
in every program (`sayplan --help` included) and only perception needs the rest."""

from __future__ import annotations

DEFAULT_ASSETS = frozenset({"table", "desk", "shelf", "cabinet", "counter", "fridge", "bed", "sofa", "wardrobe"})
DEFAULT_CONTAINERS = frozenset({"cabinet", "fridge", "wardrobe", "drawer"})
