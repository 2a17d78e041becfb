"""Regular expressions for the ``=~`` and ``!~`` label matchers, matched without backtracking.

Python's ``re`` backtracks: a pattern such as ``(a+)+$`` takes exponential time on a
near-miss, and the pattern here comes from whoever calls the API. So the pattern is parsed
(bounded: :data:`MAX_PATTERN_CHARS`, :data:`MAX_DEPTH` nested groups, repeat counts up to
:data:`MAX_REPEAT`, a compiled program of at most :data:`MAX_PROGRAM` instructions) into a
Thompson NFA and run as a Pike VM: time ``O(len(program) * len(value))``, memory
``O(len(program))``, whatever the pattern. Like Prometheus (RE2), a matcher is anchored at
both ends, and ``\\d``, ``\\w``, ``\\s`` are ASCII.

The syntax is RE2's common subset: literals, ``\\`` escapes of punctuation, ``\\d \\w \\s``
(and ``\\D \\W \\S`` outside brackets), ``.``, bracket classes with ranges and ``^``
negation, groups ``( )`` and ``(?: )``, ``|``, and the quantifiers ``* + ? {n} {n,} {n,m}``
(a lazy ``?`` after one is accepted: it changes nothing for a whole-value match). ``^`` at
the start and ``$`` at the end are accepted and mean nothing more. Anything else (flags,
look-around, back-references, Unicode classes) is refused with :class:`RegexError`.
"""

from __future__ import annotations

from dashboard.promapi.regex_syntax import MAX_DEPTH, MAX_REPEAT, Node, RegexError, parse_regex

__all__ = [
    "MAX_DEPTH",
    "MAX_PATTERN_CHARS",
    "MAX_PROGRAM",
    "MAX_REPEAT",
    "Regex",
    "RegexError",
    "compile_regex",
]

MAX_PATTERN_CHARS = 16_384  # as long as a whole query may be
MAX_PROGRAM = 2000
# A literal alternation becomes a set of at most this many strings and characters.
_MAX_LITERALS = 10_000
_MAX_LITERAL_CHARS = 1_000_000


def _size(node: Node) -> int:
    """Instructions ``node`` compiles to (an upper bound), computed before expanding repeats."""
    kind = node[0]
    if kind == "set":
        return 1
    if kind == "cat":
        return sum(_size(n) for n in node[1])
    if kind == "alt":
        return sum(_size(n) + 2 for n in node[1])
    inner, lo, hi = _size(node[1]), node[2], node[3]
    return inner * lo + (inner + 2) * (1 if hi is None else hi - lo)


class _Compiler:
    def __init__(self) -> None:
        self.prog: list[list[object]] = []

    def emit(self, *op: object) -> int:
        self.prog.append(list(op))
        return len(self.prog) - 1

    def node(self, node: Node) -> None:
        kind = node[0]
        if kind == "set":
            self.emit("char", node[1])
        elif kind == "cat":
            for item in node[1]:
                self.node(item)
        elif kind == "alt":
            jumps = []
            for branch in node[1][:-1]:
                split = self.emit("split", 0, 0)
                self.prog[split][1] = len(self.prog)
                self.node(branch)
                jumps.append(self.emit("jmp", 0))
                self.prog[split][2] = len(self.prog)
            self.node(node[1][-1])
            for j in jumps:
                self.prog[j][1] = len(self.prog)
        else:
            inner, lo, hi = node[1], node[2], node[3]
            for _ in range(lo):
                self.node(inner)
            if hi is None:  # L: split body, out; body; jmp L
                top = self.emit("split", 0, 0)
                self.prog[top][1] = len(self.prog)
                self.node(inner)
                self.emit("jmp", top)
                self.prog[top][2] = len(self.prog)
                return
            splits = []
            for _ in range(hi - lo):  # each optional copy may stop the repeat
                splits.append(self.emit("split", 0, 0))
                self.prog[splits[-1]][1] = len(self.prog)
                self.node(inner)
            for s in splits:
                self.prog[s][2] = len(self.prog)


class Regex:
    """A compiled, anchored pattern; :meth:`matches` runs in time linear in the value."""

    def __init__(self, pattern: str, prog: list[list[object]], literals: frozenset[str] | None):
        self.pattern = pattern
        self._prog = prog
        # A plain alternation of literals (Grafana's multi-value variables: (a|b|c)) is a
        # set lookup.
        self._literals = literals

    def matches(self, value: str) -> bool:
        if self._literals is not None:
            return value in self._literals
        prog = self._prog
        current = self._closure([0])
        for ch in value:
            step = [pc + 1 for pc in current if prog[pc][0] == "char" and prog[pc][1].has(ch)]  # type: ignore[attr-defined]
            if not step:
                return False
            current = self._closure(step)
        return any(prog[pc][0] == "match" for pc in current)

    def _closure(self, starts: list[int]) -> list[int]:
        """The char and match instructions reachable from ``starts`` by jumps and splits; each
        instruction at most once (so an empty loop such as ``()*`` ends)."""
        prog, out, seen = self._prog, [], set()
        stack = list(reversed(starts))
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = prog[pc]
            if op[0] == "jmp":
                stack.append(op[1])  # type: ignore[arg-type]
            elif op[0] == "split":
                stack += [op[2], op[1]]  # type: ignore[list-item]
            else:
                out.append(pc)
        return out


def _literals(node: Node) -> frozenset[str] | None:
    """The strings a node matches when it is literals and alternations of them, else None."""
    kind = node[0]
    if kind == "set":
        chars = node[1]
        single = not chars.negate and not chars.ranges and len(chars.chars) == 1
        return frozenset(chars.chars) if single else None
    if kind == "alt":
        out: set[str] = set()
        for branch in node[1]:
            found = _literals(branch)
            if found is None:
                return None
            out |= found
        return frozenset(out)
    if kind == "cat":
        words = {""}
        for item in node[1]:
            found = _literals(item)
            if found is None or len(words) * len(found) > _MAX_LITERALS:
                return None
            chars = sum(map(len, words)) * len(found) + sum(map(len, found)) * len(words)
            if chars > _MAX_LITERAL_CHARS:
                return None
            words = {w + x for w in words for x in found}
        return frozenset(words)
    return None


def compile_regex(pattern: str) -> Regex:
    """Parses and compiles ``pattern`` or raises :class:`RegexError`."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise RegexError(f"a pattern is at most {MAX_PATTERN_CHARS} characters", MAX_PATTERN_CHARS)
    tree = parse_regex(pattern)
    literals = _literals(tree)
    if literals is not None:  # a set lookup: no program, whatever the number of literals
        return Regex(pattern, [], literals)
    if _size(tree) > MAX_PROGRAM:
        raise RegexError(f"the pattern compiles to more than {MAX_PROGRAM} steps", 0)
    compiler = _Compiler()
    compiler.node(tree)
    compiler.emit("match")
    return Regex(pattern, compiler.prog, None)
