"""Count a protobuf body's elements before it is parsed (docs/interop.md, Limits).

An empty message is two bytes on the wire and some fifty in a parsed message, and the
Python walk after the parse costs microseconds per element: 6 MB of empty
``resource_metrics`` (5.9 KB gzipped) parsed to 190 MiB and took 10 s to walk. So the
protobuf paths first read the wire format, counting the repeated messages of each kind named
by a :data:`Schema`, and refuse (413) at the first kind past its limit, having read no more
than that limit's worth of elements; and they stop (503) when the request's CPU deadline has
passed. Only then is the body handed to the parser, whose memory is now bounded by the counts.

The scan reads tags and lengths only: a field outside the schema is skipped whole, a known
message field is descended into. Bytes that are not protobuf stop the scan quietly; the
parser that follows gives them their 400.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ingest.errors import ApiError, unavailable

__all__ = ["OTLP", "REMOTE_WRITE", "Deadline", "Field", "Schema", "count_elements", "too_many"]


@dataclass(frozen=True)
class Field:
    """A message-typed field: ``kind`` names the counter it adds to, ``schema`` the fields
    inside it to look at (None: not descended into). A singular field need not be counted:
    repeated on the wire, it is merged into one by the parser."""

    kind: str | None
    schema: Schema | None = None


Schema = Mapping[int, Field]


class Deadline:
    """The CPU budget of one request's decoding: ``check`` raises a 503 once ``at``
    (time.monotonic()) has passed, so a walk stops instead of answering late."""

    def __init__(
        self, seconds: float, retry_after_s: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self.at = clock() + seconds
        self.seconds = seconds
        self.retry_after_s = retry_after_s

    def check(self) -> None:
        if self._clock() > self.at:
            raise unavailable(
                f"decoding the request took longer than its deadline of {self.seconds:g}s",
                self.retry_after_s,
                "deadline",
            )


class _NotProtobuf(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _NotProtobuf
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


_EVERY = 4096  # fields read between two deadline checks
_MAX_DEPTH = 100  # the protobuf runtime's own recursion limit


def count_elements(
    buf: bytes,
    schema: Schema,
    limits: Mapping[str, tuple[int, str]],
    max_total: tuple[int, str],
    deadline: Deadline | None = None,
) -> Counter[str]:
    """The elements of each kind in ``buf``; a 413 naming the kind and the setting at the
    first one past its limit in ``limits`` (kind -> (limit, setting)), or past ``max_total``
    counted elements of all kinds together."""
    counts: Counter[str] = Counter()
    bound = {kind: limit[0] for kind, limit in limits.items()}
    no_limit = max_total[0] + 1  # a kind without its own limit is bounded by the total's
    total, budget = 0, max_total[0]
    check_in = _EVERY
    # Depth first: the stack holds the enclosing messages' (resume position, end, schema),
    # so it is as deep as the nesting (the parser refuses past 100 levels; so does this).
    # Varints of one byte (nearly every tag and length) are read inline: this loop is the
    # cost of every protobuf request.
    stack: list[tuple[int, int, Schema]] = []
    pos, end, fields = 0, len(buf), schema
    try:
        while True:
            if pos >= end:
                if not stack:
                    break
                pos, end, fields = stack.pop()
                continue
            check_in -= 1
            if not check_in:
                check_in = _EVERY
                if deadline is not None:
                    deadline.check()
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = _varint(buf, pos, end)
            wire = tag & 7
            if wire == 2:
                size = buf[pos] if pos < end else 0x80
                if size < 0x80:
                    pos += 1
                else:
                    size, pos = _varint(buf, pos, end)
                start, pos = pos, pos + size
                if pos > end:
                    raise _NotProtobuf
                field = fields.get(tag >> 3)
                if field is None:
                    continue
                kind = field.kind
                if kind is not None:
                    n = counts[kind] = counts[kind] + 1
                    if n > bound.get(kind, no_limit):
                        raise too_many(kind, *limits[kind])
                    total += 1
                    if total > budget:
                        raise too_many("elements", *max_total)
                if field.schema is not None and size:
                    if len(stack) >= _MAX_DEPTH:
                        raise _NotProtobuf
                    stack.append((pos, end, fields))
                    pos, end, fields = start, pos, field.schema
            elif wire == 0:
                _, pos = _varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:  # groups (deprecated) and bad wire types: the parser's to refuse
                raise _NotProtobuf
    except (_NotProtobuf, IndexError):
        pass
    return counts


def too_many(kind: str, limit: int, setting: str, when: str = "counted before parsing") -> ApiError:
    return ApiError(
        413,
        "too_large",
        f"the request holds more than {limit} {kind}, the limit of {setting} ({when})",
        at="body",
        reason="too_large",
    )


def _otlp() -> Schema:
    any_value: dict[int, Field] = {}
    key_value = {2: Field(None, any_value)}
    any_value[5] = Field("values", {1: Field("values", any_value)})  # ArrayValue.values
    any_value[6] = Field("values", {1: Field("attributes", key_value)})  # KeyValueList.values
    attributes = Field("attributes", key_value)
    exemplar = Field("exemplars", {7: attributes})

    def points(fields: dict[int, Field]) -> dict[int, Field]:
        return {1: Field("points", fields)}

    number = points({7: attributes, 5: exemplar})
    metric = {
        5: Field(None, number),  # gauge
        7: Field(None, number),  # sum
        9: Field(None, points({9: attributes, 8: exemplar})),  # histogram
        10: Field(None, points({1: attributes, 11: exemplar})),  # exponential_histogram
        11: Field(None, points({7: attributes, 6: Field("quantiles")})),  # summary
        12: attributes,  # metadata
    }
    scope_metrics = {1: Field(None, {3: attributes}), 2: Field("metrics", metric)}
    resource_metrics = {
        1: Field(None, {1: attributes, 3: Field("entity_refs")}),
        2: Field("scope_metrics", scope_metrics),
    }
    return {1: Field("resource_metrics", resource_metrics)}


def _remote_write() -> Schema:
    series = {1: Field("labels"), 2: Field("samples"), 4: Field("histograms")}
    return {1: Field("timeseries", series)}


OTLP: Schema = _otlp()
REMOTE_WRITE: Schema = _remote_write()
