"""Every bound on untrusted input, in one place: graph updates, full graphs, services and LLM answers.

Input from the ROS graph or from an LLM server is checked against these limits before
anything parses it deeper or recurses into it. A value nested far deeper than any real
scene graph needs (600 levels) once parsed fine and then made every later copy of the
graph fail with RecursionError; a check here refuses it with a reason instead, and the
checks are iterative so they cannot hit the recursion limit themselves. The README's
trust-model section quotes these numbers.
"""

from __future__ import annotations

import math
from typing import Any

#: nesting of one JSON value (an attribute value, an LLM answer): objects and arrays inside each other
MAX_JSON_DEPTH = 32
#: items (keys, elements and scalars) of one attribute value
MAX_JSON_ITEMS = 10_000
#: characters of one JSON-encoded attribute value (as it arrives in a message)
MAX_ATTRIBUTE_CHARS = 64 * 1024
#: attributes of one node
MAX_ATTRIBUTES = 256
#: characters of a node id, a type, a relation, a state, an affordance or an attribute key
MAX_ID_CHARS = 256
#: characters of a node name
MAX_NAME_CHARS = 1024
#: states or affordances of one node
MAX_LABELS = 256
#: items of one graph update (upserts + removals + connections + disconnections)
MAX_UPDATE_ITEMS = 10_000
#: characters of every string of one graph update together (ids, names, labels, attribute keys and values): each
#: field within its own limit, 1,000 nodes with one 60 KB attribute each (60 MB) once held the graph server for
#: 17 minutes while every other request waited; a perception frame's update is a few kilobytes
MAX_UPDATE_CHARS = 4 * 1024 * 1024
#: nodes and navigation edges of a full graph in a message (a 100k-node building has about 200k of each)
MAX_GRAPH_NODES = 1_000_000
MAX_GRAPH_EDGES = 4_000_000
#: characters of an LLM answer; a longer one is refused before it is parsed
MAX_ANSWER_CHARS = 1_000_000
#: characters of a refused answer and of its reason echoed back to the LLM in the next request
MAX_ECHO_CHARS = 2_000
#: characters of all messages of one LLM request; a longer request is not sent
MAX_REQUEST_CHARS = 8_000_000
#: tokens a server may report for one answer (more, or fewer than 0, is not a usage report)
MAX_REPORTED_TOKENS = 100_000_000
#: steps of one plan (an LLM answer, a plan file or string); the longest bundled task needs about 40
MAX_PLAN_STEPS = 1_000
#: characters of a plan_task instruction and of its context
MAX_INSTRUCTION_CHARS = 10_000
MAX_CONTEXT_CHARS = 100_000


class InputLimitError(ValueError):
    """An input over one of the limits above; the message names the field and the limit."""


def unicode_text(text: str) -> bool:
    """Whether `text` is encodable text: a lone surrogate (a JSON "\\ud800" escape) is not, and no UTF-8 writer
    (a file, a payload, a ROS string) can carry it."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_chars(text: str, limit: int, what: str) -> None:
    """Within `limit` characters, and text UTF-8 can carry (no lone surrogate: a file, a payload or a journal
    holding one could not be read back)."""
    if len(text) > limit:
        raise InputLimitError(f"{what} is {len(text)} characters long, over the limit of {limit}")
    if not unicode_text(text):
        raise InputLimitError(f"{what} holds a lone surrogate (not text UTF-8 can carry)")


def check_ids(ids: list[str] | tuple[str, ...], what: str, limit: int = MAX_ID_CHARS) -> None:
    """Each id within `limit` characters; the refusal names the field and the length, never echoes the id whole."""
    for value in ids:
        if len(value) > limit:
            raise InputLimitError(f"{what}: an id of {len(value)} characters ({shown(value)}), over the limit {limit}")


def shown(text: str, limit: int = 80) -> str:
    """`text` as a message may echo it: whole when short, else its start and its length (a 50 MB id sent by a
    peer must not come back 50 MB long in the refusal)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def check_count(count: int, limit: int, what: str) -> None:
    if count > limit:
        raise InputLimitError(f"{what}: {count} is over the limit of {limit}")


def check_json_text(text: str, what: str, max_chars: int, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Size and nesting of JSON text, checked by one scan before a parser recurses into it."""
    check_chars(text, max_chars, what)
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                raise InputLimitError(f"{what} is nested more than {max_depth} levels deep")
        elif char in "]}":
            depth -= 1


#: the integers a graph may hold: what every JSON reader of the native format (orjson) reads back exactly
MIN_JSON_INT, MAX_JSON_INT = -(2**63), 2**64 - 1


def check_json_value(value: Any, what: str, max_depth: int = MAX_JSON_DEPTH, max_items: int = MAX_JSON_ITEMS) -> None:
    """A parsed value holds only JSON types, finite numbers, integers within 64 bits and text without lone
    surrogates, and stays within the depth and item limits: so it is written and read back exactly, by a file,
    a journal or a payload.

    Iterative: a value built in code (not parsed) may be nested arbitrarily deep.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    items = 0
    while stack:
        current, depth = stack.pop()
        items += 1
        if items > max_items:
            raise InputLimitError(f"{what} holds more than {max_items} items")
        if isinstance(current, dict):
            if depth > max_depth:
                raise InputLimitError(f"{what} is nested more than {max_depth} levels deep")
            for key, inner in current.items():
                if not isinstance(key, str):
                    raise InputLimitError(f"{what} has a key that is not a string ({type(key).__name__})")
                if not unicode_text(key):
                    raise InputLimitError(f"{what} has a key holding a lone surrogate (not text UTF-8 can carry)")
                stack.append((inner, depth + 1))
        elif isinstance(current, (list, tuple)):
            if depth > max_depth:
                raise InputLimitError(f"{what} is nested more than {max_depth} levels deep")
            stack.extend((inner, depth + 1) for inner in current)
        elif isinstance(current, float):
            if not math.isfinite(current):
                raise InputLimitError(f"{what} holds a number that is not finite ({current})")
        elif isinstance(current, str):
            if not unicode_text(current):
                raise InputLimitError(f"{what} holds a string with a lone surrogate (not text UTF-8 can carry)")
        elif isinstance(current, int) and not isinstance(current, bool):
            if not MIN_JSON_INT <= current <= MAX_JSON_INT:
                raise InputLimitError(f"{what} holds an integer outside the 64-bit range ({current.bit_length()} bits)")
        elif current is not None and not isinstance(current, bool):
            raise InputLimitError(f"{what} holds a {type(current).__name__}, not a JSON value")
