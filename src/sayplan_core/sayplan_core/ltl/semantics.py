"""LTLf on finite traces, evaluated straight from the definition (De Giacomo and Vardi, IJCAI 2013).

This is the independent check of every planned path: it shares nothing with the
automaton code. A trace is a non-empty sequence of letters, each the set of
propositions that hold at one position; positions run from 0 to last = len - 1.

    p         p is in the letter at i
    X f       i < last and f holds at i + 1            (strong next: there is a next position)
    F f       f holds at some j with i <= j <= last
    G f       f holds at every j with i <= j <= last
    f U g     g holds at some j with i <= j <= last, and f at every k with i <= k < j
    f R g     at every j with i <= j <= last, g holds or f held at some k with i <= k < j
    !, &, |, ->, <->   as in propositional logic

A trace satisfies a formula when the formula holds at position 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from sayplan_core.ltl.formula import Formula

Letter = frozenset[str]


def _table(formula: Formula, trace: Sequence[Letter], memo: dict[int, list[bool]]) -> list[bool]:
    """The truth value of `formula` at every position of `trace`."""
    key = id(formula)
    if key in memo:
        return memo[key]
    n = len(trace)
    positions = range(n)
    op = formula.op
    sub = [_table(a, trace, memo) for a in formula.args]
    if op == "atom":
        out = [formula.atom in trace[i] for i in positions]
    elif op == "true":
        out = [True] * n
    elif op == "false":
        out = [False] * n
    elif op == "!":
        out = [not sub[0][i] for i in positions]
    elif op == "&":
        out = [sub[0][i] and sub[1][i] for i in positions]
    elif op == "|":
        out = [sub[0][i] or sub[1][i] for i in positions]
    elif op == "->":
        out = [(not sub[0][i]) or sub[1][i] for i in positions]
    elif op == "<->":
        out = [sub[0][i] == sub[1][i] for i in positions]
    elif op == "X":
        out = [i < n - 1 and sub[0][i + 1] for i in positions]
    elif op == "F":  # some j >= i: i itself, or some j >= i + 1 (read once from the end, not once per i)
        out, later = [False] * n, False
        for i in reversed(positions):
            later = out[i] = sub[0][i] or later
    elif op == "G":  # every j >= i: i itself, and every j >= i + 1
        out, later = [True] * n, True
        for i in reversed(positions):
            later = out[i] = sub[0][i] and later
    elif op == "U":
        out = [_until(sub[0], sub[1], i) for i in positions]
    elif op == "R":
        out = [_release(sub[0], sub[1], i) for i in positions]
    else:
        raise ValueError(f"unknown operator '{op}'")
    memo[key] = out
    return out


def _until(f: list[bool], g: list[bool], i: int) -> bool:
    """Some j >= i has g, and f holds at every k in [i, j)."""
    for j in range(i, len(g)):
        if g[j]:
            return True
        if not f[j]:  # every later j would need f at this k
            return False
    return False


def _release(f: list[bool], g: list[bool], i: int) -> bool:
    """Every j >= i has g, or f at some k in [i, j)."""
    f_seen = False  # f at some k in [i, j)
    for j in range(i, len(g)):
        if not (g[j] or f_seen):
            return False
        f_seen = f_seen or f[j]
    return True


def holds(formula: Formula, trace: Sequence[Letter], position: int = 0) -> bool:
    """Whether `formula` holds at `position` of the finite, non-empty `trace`."""
    if not trace:
        raise ValueError("LTLf is defined on non-empty traces")
    if not 0 <= position < len(trace):
        raise ValueError(f"position {position} is outside the trace of length {len(trace)}")
    return _table(formula, trace, {})[position]


def show_trace(trace: Sequence[Letter], limit: int = 8) -> str:
    """The first letters of a trace, for messages."""
    shown = " ".join("{" + ",".join(sorted(letter)) + "}" for letter in trace[:limit])
    return shown + (f" ... ({len(trace)} positions)" if len(trace) > limit else "")
