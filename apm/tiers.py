"""The rollup tiers (docs/storage.md, "Rollup tiers"): which resolutions a query has beside its
own windows, and what a window keeps for them (its partial). The storage writes and reads
them; the aggregator's rollup (aggregator/rollup.py) merges partials into tier rows."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["TIERS", "WindowPartial", "parse_resolution", "tier_name", "tiers_of"]

# tier name -> its resolution in seconds, finest first.
TIERS = {"1m": 60, "1h": 3600}
_RESOLUTION = re.compile(r"(\d+)([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class WindowPartial(NamedTuple):
    """What a fleet-level window keeps for the tiers: its exact count, sum, min and max, and
    its percentiles' histogram (``apm.loghist`` bytes; None when its query reads none)."""

    query_id: str
    window_start: float
    window_seconds: int
    n: int
    sum: float
    min: float
    max: float
    hist: bytes | None
    updated_at: float


def tiers_of(window_seconds: int) -> list[str]:
    """The tiers a query with windows of ``window_seconds`` has: those coarser than its
    window that its windows tile exactly (a 10 s query both, a 1 min one the 1 h tier)."""
    return [
        name
        for name, seconds in TIERS.items()
        if seconds > window_seconds and seconds % window_seconds == 0
    ]


def tier_name(seconds: int) -> str | None:
    """The tier of resolution ``seconds``, or None."""
    return next((name for name, s in TIERS.items() if s == seconds), None)


def parse_resolution(text: str) -> int:
    """``10s``, ``1m``, ``1h``, ``1d`` -> seconds, or a ValueError saying what is accepted."""
    m = _RESOLUTION.fullmatch(text.strip())
    if m is None or int(m.group(1)) < 1:
        raise ValueError(f"resolution {text!r} is not a whole number of s, m, h or d (10s, 1m, 1h)")
    return int(m.group(1)) * _UNIT[m.group(2)]
