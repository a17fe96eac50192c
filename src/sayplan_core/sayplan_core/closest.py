"""The one rule for "did you mean ...?" hints: which known names are like a name that was not found.

difflib's ratio alone counts shared characters anywhere, so an id's numbering and separators could carry a
match on their own: a missing `oven-1` was offered `agent-1` ("en-1" in common). Names are compared by their stems
(the name without a trailing number, case folded), so a hint needs the words to be alike; among names with
alike stems, the whole names decide the order (`mug_2` before `mug_9` for `mug-2`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

#: how alike two stems must be (difflib's ratio) for one to be offered for the other
CUTOFF = 0.6
#: the longest name compared: a hint for a long name is not worth the quadratic matcher
MAX_NAME_CHARS = 120
#: names considered at most (the first ones given): a hint over a million-node graph stays cheap
MAX_POOL = 20_000

_NUMBERED = re.compile(r"[\s_.:-]*\d+$")


def stem(name: str) -> str:
    """`name` case folded, without a trailing number and the separator before it (`Mug_12` -> `mug`)."""
    folded = name.casefold()
    bare = _NUMBERED.sub("", folded)
    return bare or folded


def close_names(name: str, known: Iterable[str], count: int = 3, cutoff: float = CUTOFF) -> list[str]:
    """Up to `count` names of `known` most like `name`, best first; [] when none has a stem like its stem."""
    if len(name) > MAX_NAME_CHARS:
        return []
    wanted = stem(name)
    matcher = difflib.SequenceMatcher(b=wanted)
    whole = difflib.SequenceMatcher(b=name.casefold())
    scored: list[tuple[float, float, str]] = []
    for index, candidate in enumerate(known):
        if index >= MAX_POOL:
            break
        if len(candidate) > MAX_NAME_CHARS or candidate == name:
            continue
        matcher.set_seq1(stem(candidate))
        if matcher.real_quick_ratio() < cutoff or matcher.quick_ratio() < cutoff:
            continue
        ratio = matcher.ratio()
        if ratio < cutoff:
            continue
        whole.set_seq1(candidate.casefold())
        scored.append((ratio, whole.ratio(), candidate))
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    return [c for _, _, c in scored[:count]]
