"""The agent's version as a metric value, which crosses from the agent to the dashboard.

A sample's value is a number, so the agent sends ``X.Y.Z`` as ``agent.version`` =
``X * 1e6 + Y * 1e3 + Z`` and the health page turns it back into text to list the versions
across a fleet."""

from __future__ import annotations

import math
import re

__all__ = ["METRIC", "version_number", "version_text"]

METRIC = "agent.version"


def version_number(version: str) -> float:
    """``major * 1e6 + minor * 1e3 + patch`` of the leading ``X.Y.Z`` (missing parts are 0,
    each part is capped at 999); the Debian epoch and revision and any suffix are left out."""
    match = re.match(r"(?:\d+:)?(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if match is None:
        return 0.0
    major, minor, patch = (min(int(p or 0), 999) for p in match.groups())
    return float(major * 1_000_000 + minor * 1_000 + patch)


def version_text(number: float) -> str:
    """The ``X.Y.Z`` that :func:`version_number` gave ``number``; ``unknown (<value>)`` for a
    value no agent sends (negative, fractional, too large, not finite)."""
    if not math.isfinite(number) or number < 0 or number != int(number) or number >= 1e9:
        return f"unknown ({number!r})"
    n = int(number)
    return f"{n // 1_000_000}.{n // 1_000 % 1_000}.{n % 1_000}"
