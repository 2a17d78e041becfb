"""PromQL's ``label_replace`` and ``label_join``, as Prometheus 2.x computes them: each series
keeps its value (at every step) and gets new labels, ``__name__`` kept unless it is the
destination.

* ``label_replace(v, dst, replacement, src, regex)``: the regex is compiled as
  ``^(?:regex)$`` (Prometheus concatenates it so, and so does this) on RE2
  (:func:`~.regex.compile_capturing`: linear time, bounded memory, the pattern's length
  capped), searched in ``src``'s value (``""`` when absent); no match leaves the series as it
  is, else ``dst`` is set to ``replacement`` with ``$1``, ``${1}``, ``$name``, ``${name}``
  expanded as Go's ``Regexp.Expand`` does (``$$`` is ``$``, a name runs as far as letters,
  digits and ``_`` go, an unknown or unmatched group is empty, a malformed ``$`` is kept);
  an empty result deletes ``dst``.
* ``label_join(v, dst, sep, src...)``: ``dst`` set to the ``src`` labels' values joined by
  ``sep`` (an absent label is ``""``); an empty result deletes ``dst``.

Checked before anything is read (:func:`relabeller`), with Prometheus' messages and its 422
``execution``: an invalid regex, an invalid destination or (``label_join``) source label
name. Two series that end with the same labels at one step are Prometheus' "vector cannot
contain metrics with the same labelset"; at different steps they are one series.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_rows import ExecutionError, Row, Sparse, dense, put
from dashboard.promapi.regex import Capturing, RegexError, compile_capturing

__all__ = ["RELABEL", "expand", "label_name", "relabel", "relabeller"]

RELABEL = ("label_replace", "label_join")
# Prometheus 2.x's model.LabelNameRE (names are ASCII there).
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_MAX_DIGITS = 9  # Go's extract reads a group number while it is below 1e8: 9 digits at most

Relabeller = Callable[[Mapping[str, str]], dict[str, str]]


def label_name(name: str) -> bool:
    """Whether ``name`` is a label name to Prometheus 2.x (``count_values`` checks it too)."""
    return _LABEL_NAME.fullmatch(name) is not None


def _extract(template: str) -> tuple[str, str] | None:
    """After a ``$``: the group's name and the rest of the template, or None (malformed)."""
    brace = template.startswith("{")
    body = template[1:] if brace else template
    i = 0
    while i < len(body) and (body[i].isalpha() or body[i].isdecimal() or body[i] == "_"):
        i += 1
    if i == 0:
        return None
    name, rest = body[:i], body[i:]
    if brace:
        if not rest.startswith("}"):
            return None
        rest = rest[1:]
    return name, rest


def _group(name: str, groupindex: Mapping[str, int]) -> int | None:
    """Go's group of a name: a number (ASCII digits, no leading zero, at most 9 digits),
    else a group of that name (Go's names may begin with a digit: ``(?P<01>...)``)."""
    number = name.isascii() and name.isdigit() and len(name) <= _MAX_DIGITS
    if number and (len(name) == 1 or name[0] != "0"):
        return int(name)
    return groupindex.get(name)


def expand(
    template: str, text: str, spans: Sequence[tuple[int, int]], names: Mapping[str, int]
) -> str:
    """Go's ``Regexp.ExpandString`` of ``template`` over a match of ``text`` (``spans``: each
    group's (start, end) in ``text``, (-1, -1) when it took no part)."""
    out: list[str] = []
    while True:
        before, dollar, after = template.partition("$")
        out.append(before)
        if not dollar:
            return "".join(out)
        if after.startswith("$"):
            out.append("$")
            template = after[1:]
            continue
        found = _extract(after)
        if found is None:
            out.append("$")
            template = after
            continue
        name, template = found
        group = _group(name, names)
        if group is not None and group < len(spans) and spans[group][0] >= 0:
            start, end = spans[group]
            out.append(text[start:end])


def _replacer(dst: str, replacement: str, src: str, regex: str) -> Relabeller:
    try:
        program: Capturing = compile_capturing(f"^(?:{regex})$")
    except RegexError as exc:
        raise ExecutionError(
            f"invalid regular expression in label_replace(): {regex} (RE2: {exc})"
        ) from None
    if not label_name(dst):
        raise ExecutionError(f"invalid destination label name in label_replace(): {dst}")

    def replaced(labels: Mapping[str, str]) -> dict[str, str]:
        value = labels.get(src, "")
        raw = value.encode("utf-8", "surrogatepass")
        match = program.search(raw)
        if match is None:
            return dict(labels)
        spans = [_chars(raw, match.span(g)) for g in range(program.groups + 1)]
        return _set(labels, dst, expand(replacement, value, spans, program.groupindex))

    return replaced


def _chars(raw: bytes, span: tuple[int, int]) -> tuple[int, int]:
    """A byte span of UTF-8 ``raw`` as character offsets (RE2 matches bytes)."""
    if span[0] < 0:
        return span
    return (_count(raw[: span[0]]), _count(raw[: span[1]]))


def _count(raw: bytes) -> int:
    return sum(1 for b in raw if b & 0xC0 != 0x80)  # the bytes that start a character


def _joiner(dst: str, sep: str, srcs: Sequence[str]) -> Relabeller:
    for src in srcs:
        if not label_name(src):
            raise ExecutionError(f"invalid source label name in label_join(): {src}")
    if not label_name(dst):
        raise ExecutionError(f"invalid destination label name in label_join(): {dst}")

    def joined(labels: Mapping[str, str]) -> dict[str, str]:
        return _set(labels, dst, sep.join(labels.get(src, "") for src in srcs))

    return joined


def _set(labels: Mapping[str, str], dst: str, value: str) -> dict[str, str]:
    out = {k: v for k, v in labels.items() if k != dst}
    if value:
        out[dst] = value
    return out


def relabeller(fn: str, args: Sequence[str]) -> Relabeller:
    """``fn``'s map of a series' labels, its string arguments (after the vector) checked:
    :class:`~.promql_rows.ExecutionError` with Prometheus' message when one is invalid."""
    if fn == "label_replace":
        dst, replacement, src, regex = args
        return _replacer(dst, replacement, src, regex)
    if fn == "label_join":
        dst, sep, *srcs = args
        return _joiner(dst, sep, srcs)
    raise ValueError(f"not a label function: {fn}")


def relabel(
    fn: str, args: Sequence[str], rows: Sequence[Row], at: tuple[int, int, Deadline]
) -> list[Row]:
    """``rows`` with ``fn``'s labels (``at``: the steps, the API's ``max_points``, the
    deadline): series that end alike are one series, and an error if both have a point at
    one step."""
    steps, max_points, deadline = at
    new = relabeller(fn, args)
    found: Sparse = {}
    for labels, values in rows:
        deadline.check()
        out = new(labels)
        for step, v in enumerate(values):
            if v is not None:
                put(found, out, step, v)
    return dense(found, steps, max_points)
