"""``make bench-aggregator-order``: the JVM dedup state under any arrival order.

Runs aggregator/jvm's ``SeenSamplesBench`` (test sources, built by ``mvn test-compile``) in
one JVM: the time to insert N offsets (default 200,000) for one dedup key and one server in
ascending, descending and random order, v4's ``SeenSamples`` against v3's insertion by
shifting (kept in the bench for a same-run ratio), the median of several runs; then what the
operator pays per key and micro-batch for the state's round trip (decode, add a batch,
encode) by state size. Prints the figures and the exact command; ``--doc`` also writes them
to docs/BENCHMARKS.md (section ``aggregator-order``). The machine is shared: compare ratios.
"""

from __future__ import annotations

import argparse
import re
import shlex

from bench.base import progress, write_section
from bench.jvm_bench import command as java_command
from bench.jvm_bench import run

__all__ = ["main"]

_INSERT = re.compile(
    r"^insert (?P<order>\w+) n=(?P<n>\d+): v3 (?P<v3>[\d.]+) ms, v4 (?P<v4>[\d.]+) ms$"
)
_TRIP = re.compile(
    r"^roundtrip held=(?P<held>\d+) batch=(?P<batch>\d+): decode (?P<dec>\d+) us, "
    r"add (?P<add>\d+) us, encode (?P<enc>\d+) us, bytes (?P<bytes>\d+)$"
)


def command(samples: int, runs: int) -> list[str]:
    """The java command line the benchmark runs (printed with the figures)."""
    return java_command("SeenSamplesBench", samples, runs)


def tables(out: str) -> tuple[list[list[object]], list[list[object]]]:
    """The insert table and the round-trip table from the bench's output."""
    inserts: list[list[object]] = [["order", "samples", "v3 ms", "v4 ms", "v3 / v4"]]
    trips: list[list[object]] = [
        ["samples held", "batch adds", "decode us", "add us", "encode us", "state bytes"]
    ]
    for line in out.splitlines():
        if m := _INSERT.match(line.strip()):
            v3, v4 = float(m["v3"]), float(m["v4"])
            ratio = f"{v3 / v4:.1f}x" if v4 > 0 else "-"
            inserts.append([m["order"], f"{int(m['n']):,}", f"{v3:,.1f}", f"{v4:,.1f}", ratio])
        elif m := _TRIP.match(line.strip()):
            held, batch, size = (f"{int(m[k]):,}" for k in ("held", "batch", "bytes"))
            trips.append([held, batch, m["dec"], m["add"], m["enc"], size])
    return inserts, trips


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5, help="median of this many (v3: at most 3)")
    parser.add_argument("--doc", action="store_true", help="also write docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    cmd = command(args.samples, args.runs)
    out = run(cmd)
    inserts, trips = tables(out)
    print(f"command: {shlex.join(cmd)}")
    for row in [*inserts, [], *trips]:
        print(" | ".join(map(str, row)))
    if len(inserts) == 1:
        progress(f"no figures in the benchmark's output:\n{out}")
        return 1
    if args.doc:
        write_section(
            "aggregator-order",
            "Aggregator: the dedup state (SeenSamples) under any arrival order",
            "make bench-aggregator-order",
            inserts,
            notes=f"Median of {args.runs} runs in one JVM ({shlex.join(cmd)}). Round trip per "
            "key and micro-batch (1 Hz servers, one new second a batch):\n\n"
            + "\n".join("| " + " | ".join(map(str, r)) + " |" for r in trips[:1])
            + "\n|"
            + "---|" * len(trips[0])
            + "\n"
            + "\n".join("| " + " | ".join(map(str, r)) + " |" for r in trips[1:]),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
