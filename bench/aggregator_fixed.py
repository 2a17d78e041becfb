"""``python -m bench.aggregator_fixed``: the JVM operator's per-sample work after the dedup
check, v3 against v4, in one JVM and one run (aggregator/jvm's ``FixedPointBench``).

Two figures: the exact fixed-point conversion per value (``Partials.fixed``: v3 went through
``Double.toString`` and ``BigDecimal``; v4 through ``FixedPoint`` where a value has at most
15 significant digits), on the benchmark fleet's values (multiples of 2^-10, as
``loadgen.fleet`` writes) and on random 17-digit doubles; and the whole per-sample work of
the partial summaries in the issue's shape (3 queries a sample, 750 samples per key and
batch), with and without the KLL sketches. Every figure is the best of several rounds; the
ratio v3/v4 is the figure to compare between runs on a shared machine.
"""

from __future__ import annotations

import argparse
import re
import sys

from bench.base import progress, write_section
from bench.jvm_bench import command, java_version, run

__all__ = ["main"]

_LINE = re.compile(r"^(?P<what>.+?): v3 (?P<v3>[\d.]+) ns/(?P<unit>\w+), v4 (?P<v4>[\d.]+) ns/\w+$")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=300_000)
    parser.add_argument("--no-doc", action="store_true", help="print only")
    args = parser.parse_args(argv)
    out = run(command("FixedPointBench", args.values, spark=True))
    rows: list[list[object]] = [["what", "v3 ns", "v4 ns", "v3 / v4"]]
    for line in out.splitlines():
        if m := _LINE.match(line.strip()):
            v3, v4 = float(m["v3"]), float(m["v4"])
            rows.append(
                [f"{m['what']} (per {m['unit']})", f"{v3:.0f}", f"{v4:.0f}", f"{v3 / v4:.1f}x"]
            )
    for row in rows:
        print(" | ".join(map(str, row)))
    if len(rows) == 1:
        progress(f"no figures in the benchmark's output:\n{out}")
        return 1
    if not args.no_doc:
        write_section(
            "aggregator-fixed",
            "Aggregator: the JVM operator's per-sample work, v3 against v4 (one JVM, one run)",
            "python -m bench.aggregator_fixed",
            rows,
            notes="Best of 7 rounds (5 for the partials) over the same values in one JVM; the "
            "machine is shared, so compare the ratio. Java " + java_version() + ".",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
