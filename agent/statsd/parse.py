"""StatsD and DogStatsD lines: ``name:value[:value...]|type[|@rate][|#tag:v,tag][|...]``.

Types: c (counter), g (gauge; a leading + or - adjusts it, as in Etsy's StatsD), ms (timer),
h and d (histogram, distribution), s (set). Events (``_e{``) and service checks (``_sc|``) are
DogStatsD messages that carry no metric: they are ignored, not counted as malformed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from apm.labels import base_name, tag_part
from apm.model import metric_name_error

__all__ = ["KINDS", "Line", "MalformedLine", "metric_name", "parse_line"]

KINDS = {"c": "counter", "g": "gauge", "ms": "timer", "h": "timer", "d": "timer", "s": "set"}


class MalformedLine(ValueError):
    pass


class Line(NamedTuple):
    name: str  # as sent, before mapping
    kind: str  # one of KINDS' values
    values: list[str]
    rate: float
    tags: str  # the raw tag list, "" when none
    relative: bool  # a gauge adjustment (+n / -n)


def parse_line(line: str) -> Line | None:
    """One line, or None for a DogStatsD event or service check. Raises MalformedLine."""
    if line.startswith(("_e{", "_sc|")):
        return None
    name, sep, rest = line.partition(":")
    if not sep or not name:
        raise MalformedLine(f"no 'name:' in {line[:80]!r}")
    fields = rest.split("|")
    if len(fields) < 2:
        raise MalformedLine(f"no '|type' in {line[:80]!r}")
    kind = KINDS.get(fields[1])
    if kind is None:
        raise MalformedLine(f"unknown type {fields[1][:10]!r}")
    rate, tags = 1.0, ""
    for extra in fields[2:]:
        if extra.startswith("@"):
            try:
                rate = float(extra[1:])
            except ValueError:
                raise MalformedLine(f"bad sample rate {extra[:20]!r}") from None
            if not 0 < rate <= 1:
                raise MalformedLine(f"sample rate {rate} outside (0, 1]")
        elif extra.startswith("#"):
            tags = extra[1:]
        # Other DogStatsD fields (|c:container, |T timestamp) carry nothing we aggregate.
    values = fields[0].split(":")
    relative = kind == "gauge" and values[0][:1] in "+-" and values[0] != ""
    if kind != "set":
        for value in values:
            try:
                number = float(value)
            except ValueError:
                raise MalformedLine(f"value {value[:20]!r} of {name[:60]!r} is no number") from None
            if not math.isfinite(number):
                raise MalformedLine(f"value {value[:20]!r} of {name[:60]!r} is not finite")
    elif not values[0]:
        raise MalformedLine(f"empty set member for {name[:60]!r}")
    return Line(name, kind, values, rate, tags, relative)


def metric_name(
    raw: str, tags: str, prefix: str, tag_mode: str, drop: Callable[[str], bool] | None = None
) -> str:
    """The platform metric name for a StatsD name and its tags. With tag_mode 'name' each tag
    that ``drop`` does not refuse becomes a sorted ``.key_value`` suffix; with 'drop' tags are
    ignored. Characters outside the naming rule become '_'. Raises MalformedLine when no valid
    name results."""
    name = base_name(raw)
    if prefix:
        name = f"{prefix.rstrip('.')}.{name}"
    if tags and tag_mode == "name":
        parts = sorted(
            tag_part(tag) for tag in tags.split(",") if tag and (drop is None or not drop(tag))
        )
        name = ".".join([name, *(p for p in parts if p)])
    if (error := metric_name_error(name)) is not None:
        raise MalformedLine(error)
    return name
