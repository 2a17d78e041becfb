"""`make bench-aggregator-by-server`: the `issue`, `by-server` and `by-server-all`
configurations of bench/aggregator.py, each in its own process (two jobs in one SparkSession
made no batch, bench/aggregator.py says), one after the other on the same machine, into one
section of docs/BENCHMARKS.md with each one's highest sustained rate and the targets of issue
35 beside them: `by-server` at least 0.8x `issue`, `by-server-all` at least 300,000
samples/s with freshness p99 <= 5 s."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.base import progress, write_section

__all__ = ["main"]

CONFIGS = ("issue", "by-server", "by-server-all")
DEFAULT_RATES = {
    "issue": "200000,400000,600000,800000,1000000,1200000",
    "by-server": "200000,400000,600000,800000,1000000,1200000",
    "by-server-all": "50000,100000,200000,300000,400000",
}


def _run(config: str, rates: str, step_s: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            "-m",
            "bench.aggregator",
            "--configs",
            config,
            "--rates",
            rates,
            "--step-seconds",
            str(step_s),
            "--floor-seconds",
            "0",
            "--no-doc",
            "--json",
            str(out),
        ]
        progress(" ".join(cmd[1:]))
        subprocess.run(cmd, check=True)
        data = json.loads(out.read_text())
    data["command"] = " ".join(["python", *cmd[1:-2]])
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregator_by_server")
    for config in CONFIGS:
        parser.add_argument(f"--{config}-rates", default=DEFAULT_RATES[config])
    # 60 s: a BY server window's rows are written in the batch that completes it (v5), and
    # at 10-17 s a batch a 30 s step held two batches, one of them the warm-up's backlog.
    parser.add_argument("--step-seconds", type=int, default=60)
    parser.add_argument("--no-doc", action="store_true", help="print only")
    args = parser.parse_args(argv)
    runs = {}
    for config in CONFIGS:
        rates = getattr(args, f"{config.replace('-', '_')}_rates")
        runs[config] = _run(config, rates, args.step_seconds)
    header = runs["issue"]["header"]
    table = [header]
    for config in CONFIGS:
        table.extend(runs[config]["configs"][config]["rows"])
    best = {c: int(runs[c]["configs"][c]["best"]) for c in CONFIGS}
    ratio = best["by-server"] / best["issue"] if best["issue"] else float("nan")
    all_rows = [r for r in runs["by-server-all"]["configs"]["by-server-all"]["rows"]]
    fresh = next(
        (r[9] for r in all_rows if int(r[2].replace(",", "")) == best["by-server-all"]), "-"
    )
    lines = [f"`{c}`: highest sustained {best[c]:,} samples/s" for c in CONFIGS]
    verdict = (
        f"{'; '.join(lines)}. `by-server` / `issue` = {ratio:.2f} (target >= 0.8: "
        f"{'met' if ratio >= 0.8 else 'not met'}); `by-server-all` target >= 300,000 "
        f"samples/s with freshness p99 <= 5 s: "
        f"{'met' if best['by-server-all'] >= 300_000 else 'not met'} (freshness p99 of "
        f"`FROM *` 10 s at its highest sustained rate: {fresh} s)."
    )
    phases = "; ".join(
        f"`{c}` at {best[c]:,}: "
        + ", ".join(
            f"{k} {v:.2f}"
            for k, v in runs[c]["configs"][c]["phases"].items()
            if k.startswith("foreachBatch")
            or k in ("addBatch", "addBatch max", "windows allUpdatesTimeMs")
        )
        for c in CONFIGS
        if runs[c]["configs"][c]["phases"]
    )
    stopped = "; ".join(
        f"`{c}` at its first unsustained rate: "
        + ", ".join(
            f"{k} {v:.2f}"
            for k, v in runs[c]["configs"][c].get("last_phases", {}).items()
            if k.startswith("foreachBatch")
            or k in ("addBatch", "addBatch max", "windows allUpdatesTimeMs")
        )
        for c in CONFIGS
        if runs[c]["configs"][c].get("last_phases")
    )
    notes = (
        "Each configuration in its own process, one after the other, same machine state "
        "(bench/aggregator.py's job on local[2], 10 metric topics, 10,000 servers, trigger 2 s; "
        "sustained = lag growth under 5% of the rate over the last two thirds of a step). "
        f"Commands: {'; '.join('`' + runs[c]['command'] + '`' for c in CONFIGS)}. "
        f"{verdict} Median (and max: the heaviest batch) phases of each one's batches at its "
        f"highest sustained rate (seconds; windows allUpdatesTimeMs in ms): {phases}. "
        f"And {stopped}."
    )
    print("\n".join(" | ".join(map(str, row)) for row in table))
    print(notes)
    if not args.no_doc:
        write_section(
            "aggregator-by-server",
            "Aggregator, per-server series (BY server over 10,000 servers, issue 35)",
            "make bench-aggregator-by-server",
            table,
            notes,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
