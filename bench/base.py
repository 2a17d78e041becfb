"""Benchmarks write their figures into docs/BENCHMARKS.md, each in its own marked section, so
that running one benchmark updates its table and leaves the others' alone."""

from __future__ import annotations

import fcntl
import math
import platform
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from apm.settings import PROJECT_ROOT

__all__ = ["percentile", "progress", "publish", "write_section"]

DOC = PROJECT_ROOT / "docs" / "BENCHMARKS.md"
_HEADER = """# Benchmarks

Measured on this project's reference machine (2 cores, 24 GiB, loopback only; shared and noisy,
so figures are medians and ratios from one run, never asserted in tests). Each section is
rewritten by the command shown in it.
"""


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0 < p <= 100): a value that was measured. The one
    percentile of the benchmarks' tables. No values: nan, which the table shows as such."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def _table(rows: Sequence[Sequence[object]]) -> str:
    head, *body = [[str(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def write_section(
    key: str,
    title: str,
    command: str,
    rows: Sequence[Sequence[object]],
    notes: str = "",
    doc: Path = DOC,
) -> str:
    """Replaces (or appends) the section ``key`` with a table whose first row is the header.
    Returns the section's markdown, which the caller may also print."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = (
        f"<!-- bench:{key}:start -->\n## {title}\n\n"
        f"Command: `{command}` ({stamp}, Python {platform.python_version()})\n\n"
        f"{_table(rows)}\n"
        + (f"\n{notes.strip()}\n" if notes.strip() else "")
        + f"<!-- bench:{key}:end -->"
    )
    doc.parent.mkdir(parents=True, exist_ok=True)
    with open(doc, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read() or _HEADER
        pattern = re.compile(
            rf"<!-- bench:{re.escape(key)}:start -->.*?"
            rf"<!-- bench:{re.escape(key)}:end -->",
            re.S,
        )
        text = (
            pattern.sub(lambda _m: body, text)
            if pattern.search(text)
            else (text.rstrip() + "\n\n" + body + "\n")
        )
        handle.seek(0)
        handle.truncate()
        handle.write(text)
    return body


def publish(
    key: str, title: str, command: str, rows: Sequence[Sequence[object]], notes: str = ""
) -> int:
    """Writes the section to docs/BENCHMARKS.md, prints it, and is the benchmark's exit code."""
    print(write_section(key, title, command, rows, notes))
    return 0
