"""Compares the platform's stored results with the load generator's truth, for the end-to-end
test and the benchmark: exact for the catalogue's exact functions (min, max, count, sum and avg:
the fleet's values make sums order-independent), within a stated bound for the sketch-based
ones (percentiles), and no window missing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apm.functions import spec_of_key
from apm.query import WindowResult

__all__ = ["compare"]


def _exact(key: str) -> bool:
    spec = spec_of_key(key)
    return spec is not None and spec.kind == "exact"


def compare(
    truth: Mapping[str, Any],
    results: Iterable[WindowResult],
    *,
    percentile_tolerance: float = 0.0,
    complete_only: bool = False,
) -> list[str]:
    """Every difference between ``truth`` (a :meth:`TruthCollector.document`, e.g. read from
    an ``--expect`` file) and ``results``, one readable line each; empty when they agree.
    ``percentile_tolerance`` is the absolute error allowed on the values of sketch-based
    functions (``pNN``) and of keys the catalogue does not know."""
    got = {float(r.window_start): r for r in results}
    problems = []
    for window in truth["windows"]:
        if complete_only and not window["complete"]:
            continue
        start = float(window["window_start"])
        row = got.get(start)
        if row is None:
            problems.append(f"window {start:.0f}: missing ({window['samples']} samples expected)")
            continue
        if row.samples != window["samples"]:
            problems.append(
                f"window {start:.0f}: {row.samples} samples, expected {window['samples']}"
            )
        for key, want in window["values"].items():
            have = row.values.get(key)
            if have is None:
                problems.append(f"window {start:.0f}: {key} missing")
            elif _exact(key) and have != want:
                problems.append(f"window {start:.0f}: {key} = {have!r}, expected {want!r}")
            elif not _exact(key) and abs(have - want) > percentile_tolerance:
                problems.append(
                    f"window {start:.0f}: {key} = {have!r}, expected {want!r} "
                    f"+/- {percentile_tolerance}"
                )
    return problems
