"""The DFA of an LTLf formula, built by MONA and read from MONA's own explicit automaton output.

The formula is translated here into MONA's monadic second-order logic on finite
strings (`m2l-str`): one set variable P<i> per proposition (the positions where it
holds), the formula evaluated at position 0, each temporal operator a bounded
quantifier over positions up to the last one (`max $`), following the semantics in
`semantics.py`. `mona -u -n -w` prints the minimal DFA as bit patterns over the
free variables (`0X1`: P0 false, P1 anything, P2 true), so guards are read exactly,
with no expression parsing.

MONA's automaton starts in a state 0 that reads one dummy letter before the
string; the state it moves to is the state of the empty trace, which is taken as
our initial state. MONA reads its program from standard input and writes nothing,
so builds may run concurrently and from a read-only install. Automata are cached
by the formula's shape (atoms renamed in sorted order).
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from sayplan_core.ltl.formula import MAX_FORMULA_SIZE, Formula, FormulaError

MONA_TIMEOUT_S = 20.0
#: MONA's explicit output is read and parsed in Python; a formula whose automaton needs more than this much text
#: (about 8x the 2 MB of ten propositions in any order, the largest benchmark shape) is refused instead of parsed
#: for half a minute. Bounds the whole build, with the timeout on MONA itself.
MONA_MAX_OUTPUT_BYTES = 16 * 1024 * 1024

_STATE_LIST = re.compile(r"^(Initial state|Accepting states|Rejecting states|Don't-care states):(.*)$", re.M)
_TRANSITION = re.compile(r"^State (\d+): ([01X]*) -> state (\d+)$", re.M)
_FREE = re.compile(r"^DFA for formula with free variables:(.*)$", re.M)


class AutomatonError(RuntimeError):
    """MONA is missing, failed, or printed something unexpected."""


def require_tools() -> None:
    """Fail early, with what to install, when MONA is missing."""
    if shutil.which("mona") is None:
        raise AutomatonError("the 'mona' program is not installed (Debian: apt-get install mona)")


def mona_program(formula: Formula, var_of: dict[str, str]) -> str:
    """The MONA m2l-str program whose models are the traces satisfying `formula` (atoms -> set variables)."""
    counter = itertools.count()

    def fresh() -> str:
        return f"t{next(counter)}"

    def at(f: Formula, i: str) -> str:
        op = f.op
        if op == "atom":
            return f"({i} in {var_of[f.atom]})"
        if op in ("true", "false"):
            return op
        if op == "!":
            return f"~{at(f.args[0], i)}"
        if op in ("&", "|", "->", "<->"):
            connective = {"&": "&", "|": "|", "->": "=>", "<->": "<=>"}[op]
            return f"({at(f.args[0], i)} {connective} {at(f.args[1], i)})"
        j = fresh()
        in_rest = f"{i} <= {j} & {j} <= max $"  # j in [i, last]
        if op == "X":  # strong next: j = i + 1 exists
            return f"(ex1 {j}: {i} < {j} & {j} <= max $ & ~(ex1 {j}m: {i} < {j}m & {j}m < {j}) & {at(f.args[0], j)})"
        if op == "F":
            return f"(ex1 {j}: {in_rest} & {at(f.args[0], j)})"
        if op == "G":
            return f"(all1 {j}: ({in_rest}) => {at(f.args[0], j)})"
        k = fresh()
        before_j = f"{i} <= {k} & {k} < {j}"  # k in [i, j)
        if op == "U":
            return f"(ex1 {j}: {in_rest} & {at(f.args[1], j)} & (all1 {k}: ({before_j}) => {at(f.args[0], k)}))"
        if op == "R":
            return f"(all1 {j}: ({in_rest}) => ({at(f.args[1], j)} | (ex1 {k}: {before_j} & {at(f.args[0], k)})))"
        raise FormulaError(f"unknown operator '{op}'")

    lines = ["m2l-str;"]
    if var_of:
        lines.append("var2 " + ", ".join(sorted(var_of.values(), key=lambda v: int(v[1:]))) + ";")
    lines.append(at(formula, "0") + ";")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Automaton:
    """MONA's answer, independent of atom names: states, the initial state, accepting states, transitions."""

    initial: int
    accepting: frozenset[int]
    # state -> [(mask, value, target)]: a letter with bits b moves there when b & mask == value
    transitions: dict[int, tuple[tuple[int, int, int], ...]]


def _parse_mona(output: str, variables: list[str]) -> _Automaton:
    free = _FREE.search(output)
    if free is None:
        raise AutomatonError(f"MONA printed no automaton: {output.strip()[:300]}")
    order = free.group(1).split()
    if sorted(order) != sorted(variables):
        raise AutomatonError(f"MONA's automaton is over {order}, expected {variables}")
    bit = {name: variables.index(name) for name in order}
    lists = {m.group(1): [int(s) for s in m.group(2).split()] for m in _STATE_LIST.finditer(output)}
    if "Initial state" not in lists or "Accepting states" not in lists:
        raise AutomatonError("MONA's automaton has no initial or accepting state list")
    transitions: dict[int, list[tuple[int, int, int]]] = {}
    for match in _TRANSITION.finditer(output):
        pattern = match.group(2)
        if len(pattern) != len(order):
            raise AutomatonError(f"MONA transition '{match.group(0)}' does not have one bit per variable")
        mask = value = 0
        for name, char in zip(order, pattern, strict=True):
            if char != "X":
                mask |= 1 << bit[name]
                value |= (char == "1") << bit[name]
        transitions.setdefault(int(match.group(1)), []).append((mask, value, int(match.group(3))))
    start = lists["Initial state"][0]
    dummy = transitions.get(start, [])
    if len(dummy) != 1 or dummy[0][0] != 0:
        raise AutomatonError(f"MONA's state {start} does not read the dummy letter with a single transition")
    return _Automaton(
        initial=dummy[0][2],
        accepting=frozenset(lists["Accepting states"]),
        transitions={q: tuple(edges) for q, edges in transitions.items()},
    )


@lru_cache(maxsize=256)
def _run_mona(program: str, variables: tuple[str, ...]) -> _Automaton:
    require_tools()
    try:
        proc = subprocess.Popen(
            ["mona", "-q", "-u", "-n", "-w", "/dev/stdin"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    except OSError as exc:
        raise AutomatonError(f"MONA could not be started: {exc}") from exc
    timer = threading.Timer(MONA_TIMEOUT_S, proc.kill)  # the read below blocks: the timer ends it
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(program.encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass  # MONA quit early: its exit code and output say why
        raw = proc.stdout.read(MONA_MAX_OUTPUT_BYTES + 1)
        too_large = len(raw) > MONA_MAX_OUTPUT_BYTES
        if too_large:
            proc.kill()
        code = proc.wait()
        timed_out = not timer.is_alive() and not too_large
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if too_large:
        raise AutomatonError(
            f"the automaton of this formula is too large (MONA printed more than {MONA_MAX_OUTPUT_BYTES >> 20} MB); "
            "use fewer propositions or fewer nested X"
        )
    if timed_out and code != 0:
        raise AutomatonError(f"MONA took longer than {MONA_TIMEOUT_S:.0f} s on this formula")
    output = raw.decode(errors="replace")
    if code != 0:
        raise AutomatonError(f"MONA failed (exit {code}): {' '.join(output.strip().splitlines())[:300]}")
    return _parse_mona(output, list(variables))


@dataclass
class Dfa:
    """A complete DFA over letters (sets of atoms); a trace is accepted when its run ends in `accepting`."""

    initial: int  # the state before any letter (the empty trace)
    accepting: frozenset[int]
    transitions: dict[int, tuple[tuple[int, int, int], ...]]
    symbol_of: dict[str, int]  # atom (node id) -> bit
    _cache: dict[tuple[int, frozenset[str]], int] = field(default_factory=dict, repr=False)

    @property
    def atoms(self) -> set[str]:
        return set(self.symbol_of)

    @cached_property
    def states(self) -> list[int]:
        out = {self.initial} | set(self.accepting) | set(self.transitions)
        for edges in self.transitions.values():
            out.update(target for _, _, target in edges)
        return sorted(out)

    def successors(self, state: int) -> set[int]:
        return {target for _, _, target in self.transitions.get(state, ())}

    def step(self, state: int, atoms: frozenset[str]) -> int:
        """The next state after reading a letter in which exactly `atoms` (of this DFA's atoms) hold."""
        key = (state, atoms)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        bits = 0
        for atom in atoms:
            index = self.symbol_of.get(atom)
            if index is not None:
                bits |= 1 << index
        for mask, value, target in self.transitions.get(state, ()):
            if bits & mask == value:
                self._cache[key] = target
                return target
        raise AutomatonError(f"the automaton has no transition from state {state} on {sorted(atoms)}")

    def run(self, trace: list[frozenset[str]]) -> int:
        state = self.initial
        for letter in trace:
            state = self.step(state, letter)
        return state

    def accepts(self, trace: list[frozenset[str]]) -> bool:
        return self.run(trace) in self.accepting

    @cached_property
    def live_states(self) -> frozenset[int]:
        """States from which some accepting state can be reached (by zero or more letters)."""
        predecessors: dict[int, set[int]] = {}
        for q in self.states:
            for target in self.successors(q):
                predecessors.setdefault(target, set()).add(q)
        live, stack = set(self.accepting), list(self.accepting)
        while stack:
            for q in predecessors.get(stack.pop(), ()):
                if q not in live:
                    live.add(q)
                    stack.append(q)
        return frozenset(live)


def build_dfa(formula: Formula) -> Dfa:
    """The DFA of `formula`; FormulaError when no non-empty trace satisfies it."""
    if formula.size() > MAX_FORMULA_SIZE:
        raise FormulaError(f"the formula has {formula.size()} operators and atoms; at most {MAX_FORMULA_SIZE}")
    atoms = sorted(formula.atoms())
    var_of = {a: f"P{i}" for i, a in enumerate(atoms)}
    automaton = _run_mona(mona_program(formula, var_of), tuple(var_of[a] for a in atoms))
    dfa = Dfa(automaton.initial, automaton.accepting, automaton.transitions, {a: i for i, a in enumerate(atoms)})
    # satisfiable on a non-empty trace: an accepting state one or more letters from the initial state
    reached, frontier = set(), dfa.successors(dfa.initial)
    while frontier:
        reached |= frontier
        frontier = {t for q in frontier for t in dfa.successors(q)} - reached
    if not reached & dfa.accepting:
        raise FormulaError(f"the formula {formula.prefix()} can never be satisfied")
    return dfa
