"""Prometheus' request parameters: times (unix seconds or RFC 3339), durations (``15s``,
``1h30m`` or seconds) and the range of a range query, with Prometheus' own checks and
messages."""

from __future__ import annotations

import math
import re

from dashboard.validation import parse_time

__all__ = [
    "MAX_RESOLUTION",
    "ParamError",
    "parse_duration",
    "parse_range",
    "parse_span",
    "parse_when",
]

# Prometheus refuses a range query of more points per series than this (its own limit).
MAX_RESOLUTION = 11_000
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800, "y": 31_536_000}
_PART = re.compile(r"(\d{1,12})(ms|s|m|h|d|w|y)")
# RFC 3339 allows nanoseconds; Python's parser takes microseconds.
_FRACTION = re.compile(r"(\.\d{6})\d{1,3}")


class ParamError(ValueError):
    """A bad parameter: a 400 ``bad_data`` answer."""


def parse_when(raw: str | None, name: str, default: float | None = None) -> float:
    """A time parameter: unix seconds (fractions allowed) or RFC 3339."""
    if raw is None or raw.strip() == "":
        if default is None:
            raise ParamError(f'invalid parameter "{name}": missing')
        return default
    text = _FRACTION.sub(r"\1", raw.strip()[:64], count=1)
    try:
        return parse_time(text, 0.0)
    except ValueError as exc:
        raise ParamError(
            f'invalid parameter "{name}": cannot parse {raw[:40]!r} to a valid timestamp ({exc})'
        ) from None


def parse_duration(raw: str | None, name: str) -> float:
    """Seconds (``15``, ``0.5``) or a Prometheus duration (``15s``, ``1h30m``, ``500ms``)."""
    text = (raw or "").strip()
    seconds: float | None
    try:
        seconds = float(text)
    except ValueError:
        seconds = _duration(text)
    if seconds is None or not math.isfinite(seconds):
        raise ParamError(
            f'invalid parameter "{name}": cannot parse {text[:40]!r} to a valid duration'
        )
    return seconds


def _duration(text: str) -> float | None:
    if not text or len(text) > 64:
        return None
    total, pos = 0.0, 0
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None:
            return None
        total += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total


def parse_range(
    start_raw: str | None, end_raw: str | None, step_raw: str | None
) -> tuple[float, float, float]:
    """(start, end, step) of a range query, checked as Prometheus checks them."""
    start = parse_when(start_raw, "start")
    end = parse_when(end_raw, "end")
    if end < start:
        raise ParamError('invalid parameter "end": end timestamp must not be before start time')
    step = parse_duration(step_raw, "step")
    if step <= 0:
        raise ParamError(
            'invalid parameter "step": zero or negative query resolution step widths are not '
            "accepted. Try a positive integer"
        )
    if (end - start) / step > MAX_RESOLUTION:
        raise ParamError(
            f"exceeded maximum resolution of {MAX_RESOLUTION:,} points per timeseries. Try "
            "decreasing the query resolution (?step=XX)"
        )
    return start, end, step


def parse_span(start_raw: str | None, end_raw: str | None, now: float) -> tuple[int, int] | None:
    """The ``start`` and ``end`` of ``/series`` and the label endpoints as unix ms: None when
    neither is given (the series of now), else with Prometheus' defaults (the beginning of
    time; the end here is now, as nothing is stored later)."""
    if not (start_raw or "").strip() and not (end_raw or "").strip():
        return None
    start = parse_when(start_raw, "start", default=0.0)
    end = parse_when(end_raw, "end", default=now)
    if end < start:
        raise ParamError('invalid parameter "end": end timestamp must not be before start time')
    return round(start * 1000), round(end * 1000)
