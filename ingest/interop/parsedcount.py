"""Bound a protobuf body's elements by parsing small bodies first (docs/interop.md, Limits).

:func:`ingest.interop.wirecount.count_elements` walks the wire format in Python, which costs
~0.7 us a field: 140 ms for a legitimate 900 KB OTLP body that upb parses in 10-25 ms. The
count is there to bound the parse's memory, and a small body bounds it by itself: every
counted element is a length-delimited field of at least two bytes, so a body of n bytes
holds at most n/2 elements, and parses to at most ~32 n bytes (measured: 1 MiB of empty
``resource_metrics`` grew the process by 32 MiB). So a body of at most
``protobuf_parse_first_max_bytes`` is parsed first, and only the kinds with a limit of their
own are then counted on the parsed message with ``len()`` (C, not a Python loop per
element), level by level, each level's loop bounded by the limit above it. A larger body is
counted on the wire first, as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ingest.interop.wirecount import Deadline, Schema, count_elements, too_many

__all__ = ["OTLP_LEVELS", "REMOTE_WRITE_LEVELS", "Level", "parse_bounded"]


class Level(NamedTuple):
    """A repeated field counted as ``kind``; ``inner`` are the levels inside each element."""

    kind: str
    elements: Callable[[Any], Sequence[Any]]
    inner: tuple[Level, ...] = ()


def _points(metric: Any) -> Sequence[Any]:
    data = metric.WhichOneof("data")
    return getattr(metric, data).data_points if data else ()


OTLP_LEVELS = (
    Level(
        "resource_metrics",
        lambda m: m.resource_metrics,
        (
            Level(
                "scope_metrics",
                lambda m: m.scope_metrics,
                (Level("metrics", lambda m: m.metrics, (Level("points", _points),)),),
            ),
        ),
    ),
)
REMOTE_WRITE_LEVELS = (
    Level("timeseries", lambda m: m.timeseries, (Level("samples", lambda s: s.samples),)),
)

_EVERY = 4096  # elements looked at between two deadline checks


def parse_bounded(
    buf: bytes,
    parse: Callable[[bytes], Any],
    schema: Schema,
    levels: tuple[Level, ...],
    limits: Mapping[str, tuple[int, str]],
    max_total: tuple[int, str],
    deadline: Deadline | None,
    parse_first_max_bytes: int,
) -> Any:
    """``parse(buf)``, refused (413) past ``limits`` or ``max_total`` elements and stopped
    (503) past ``deadline``: counted on the wire before the parse when ``buf`` is larger than
    ``parse_first_max_bytes`` or could hold more than ``max_total`` elements, else parsed
    first and counted on the message."""
    if len(buf) > min(parse_first_max_bytes, 2 * max_total[0]):
        count_elements(buf, schema, limits, max_total, deadline)
        return parse(buf)
    message = parse(buf)
    _count_levels(message, levels, limits, deadline)
    return message


def _count_levels(
    message: Any,
    levels: tuple[Level, ...],
    limits: Mapping[str, tuple[int, str]],
    deadline: Deadline | None,
) -> None:
    counts: Counter[str] = Counter()
    stack: list[tuple[Any, tuple[Level, ...]]] = [(message, levels)]
    check_in = _EVERY
    while stack:
        node, node_levels = stack.pop()
        check_in -= 1
        if not check_in:
            check_in = _EVERY
            if deadline is not None:
                deadline.check()
        for level in node_levels:
            elements = level.elements(node)
            n = counts[level.kind] = counts[level.kind] + len(elements)
            limit = limits.get(level.kind)
            if limit is not None and n > limit[0]:
                raise too_many(level.kind, *limit, "counted before it was read")
            if level.inner:
                # At most the limit of this kind (or the body's n/2) pushed: bounded.
                stack.extend((element, level.inner) for element in elements)
