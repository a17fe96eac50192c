"""Which whole graphs the scene graph server answered fetches with, so a follower can confirm a fetched graph.

Any node on the domain can offer `get_scene_graph` for a moment, answer a follower's fetch with a graph of its own
and leave before the follower looks for rival servers. A follower therefore takes a fetched graph as unconfirmed and
asks the server, with `version_only`, whether it answered a fetch at that version with a graph of that digest; only
the server's yes makes the copy count as in sync (docs/concepts/trust.md).
"""

from __future__ import annotations

import array
import hashlib
import threading
from collections import OrderedDict
from typing import Any

from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg

#: whole-graph answers remembered (a follower confirms within a round trip of its fetch)
KEPT_ANSWERS = 64
DIGEST_BYTES = 16


def message_digest(msg: Any) -> bytes:
    """BLAKE2b-128 of a message's field values, walked in declaration order. Not of its serialized bytes: CDR
    padding is not zeroed, so the same graph serialized twice gave different bytes (and digests) now and then."""
    digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
    _feed(digest, msg)
    return digest.digest()


def _feed(digest: Any, value: Any) -> None:
    if hasattr(value, "get_fields_and_field_types"):
        for field in value.get_fields_and_field_types():
            digest.update(b"{")
            _feed(digest, getattr(value, field))
        digest.update(b"}")
    elif isinstance(value, array.array) and value.typecode == "B":  # a payload: its bytes at once, not item by item
        digest.update(b"B%d:" % len(value) + value.tobytes())
    elif isinstance(value, (list, tuple, array.array)) or type(value).__module__ == "numpy":
        digest.update(b"[%d" % len(value))
        for item in value:
            _feed(digest, item)
    elif isinstance(value, float):
        digest.update(value.hex().encode())
    elif isinstance(value, bytes):
        digest.update(b"b%d:" % len(value) + value)
    else:
        text = str(value).encode("utf-8", "surrogatepass")
        digest.update(b"s%d:" % len(text) + text)


def graph_digest(msg: SceneGraphMsg) -> bytes:
    """The digest of a graph message (message_digest): the same on the server and on a follower for one content."""
    return message_digest(msg)


class ServedGraphs:
    """The digests of the last KEPT_ANSWERS whole-graph answers of one server start, by version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: OrderedDict[int, set[bytes]] = OrderedDict()

    def record(self, version: int, digest: bytes) -> None:
        with self._lock:
            self._digests.setdefault(version, set()).add(digest)
            self._digests.move_to_end(version)
            while len(self._digests) > KEPT_ANSWERS:
                self._digests.popitem(last=False)

    def confirms(self, version: int, digest: bytes) -> bool:
        """Whether a whole-graph answer at `version` had this digest."""
        with self._lock:
            return digest in self._digests.get(version, ())
