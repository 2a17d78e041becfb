"""The "Faults" section of docs/BENCHMARKS.md, from the figures the ``cluster`` test tier
records (``var/cluster/faults.json``, one entry per fault: tests/cluster/support.py)::

    make bench-faults FAULTS_RATE=30000   # the tier at that rate, then this table

Nothing is measured here: the fault tests measure under their own load, and this only lays
their last figures out as a table (per fault: samples lost, counted twice, windows wrong,
dashboard reads failed, and the seconds from the fault's end until freshness is back under
its bound).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.base import write_section

__all__ = ["COMMAND", "main", "rows"]

COMMAND = "make bench-faults"
ORDER = (
    "kafka broker kill -9",
    "cassandra node kill -9",
    "spark worker kill -9",
    "kafka node frozen 30 s (SIGSTOP)",
    "cassandra node frozen 30 s (SIGSTOP)",
    "two kafka brokers down 30 s",
    "ingest replica kill -9",
    "aggregator shard stopped",
    "kafka broker partitioned 30 s (network)",
)
NOTES = """
Each fault runs under its own real-time load from `apm loadgen` through the nginx load balancer
(`APM_FAULTS_RATE` / 10 servers x 10 metrics, one snapshot a second; 50 s, 70 s for Cassandra
kill -9, 80 s for the shard) with `--query ... --expect`
truth for one stored query (`WINDOW 10s COMPUTE min, max, avg, count, sum`) on a metric of its
own, whose shard the test picks. Faults start 10-15 s into the load; killed nodes are restarted
15 s later (Cassandra 40 s later, or once the aggregator has written with it down, up to 150 s;
the shard stays stopped about 40 s); frozen nodes get SIGCONT
30 s after SIGSTOP; the two brokers are restarted 30 s after their kill. Load held = samples/s
the ingest answered 202 for, over the loadgen's elapsed time (every sample generated was
accepted: the loadgen exits 1 otherwise; retries = requests the loadgen sent again after a
refusal, a 503 or no answer). Samples lost = the truth's samples minus those counted in the
stored windows (read from Cassandra at LOCAL_QUORUM), counted twice = the excess; windows wrong
= windows whose stored values differ from the truth in any function. Converge = from the load's
end until every window equals the truth. Dashboard reads = the probe query's last 3 minutes read
through the dashboard's API once a second through the whole load, and how many failed. Fresh
again = seconds from the fault's end (restart or SIGCONT done) until freshness (the newest
sample's time, i.e. now or the load's end, minus the end of the probe query's newest stored
window, as the dashboard's API answers) is at most 30 s ("never": not within 30 s of the
load's end). Time to recover says what it measures per fault.
The whole tier shares one cluster (`apm cluster up`, 3 Kafka brokers, 3 Cassandra nodes, a Spark
master and 2 workers, 2 ingest replicas, 2 aggregator shards, the dashboard) on the 2-core
reference machine.

What the figures show, and their limits:
- Kafka: while the partitions led by the killed broker move, the ingest answers 503 for the
  samples it could not get acknowledged (acks=all, min.insync.replicas=2); the loadgen retries
  them (the retries column), and none is lost or counted twice.
- Cassandra: writes at LOCAL_QUORUM go on (2 of 3 replicas). Reads of whole tables (the query
  and status tables, which every dashboard answer and every aggregator batch read) may time
  out until the other nodes' failure detector convicts the dead one (gossip, 10-27 s here):
  such a read picks its 2 replicas without the speculative retry single-partition reads get.
  The test counts those failed dashboard reads and requires every read sent 25 s or more after
  the kill to succeed; hinted handoff replays the missed writes on restart.
- Spark: the time to recover is mostly a new executor JVM starting on the loaded 2-core machine
  (20-50 s) plus the lost shuffle stages run again; it varied from 30 s to 153 s over four runs.
- Ingest: nginx sends a request that failed on the dead replica to the other one itself
  (`proxy_next_upstream ... non_idempotent`), so the loadgen rarely sees an error at all.
- Kafka broker partitioned (network; tests/cluster/test_network_faults.py): the brokers run on
  hosts of their own (network namespaces on one bridge, 169.254.1.x, `ClusterLayout.hosts`);
  kafka-1 is cut from the hosts of kafka-2 and kafka-3 (brokers and controller quorum) by
  nftables for 30 s, while the test process still reaches it. Its row counts records, not
  samples: 5,000 records/s offered for 55 s straight to Kafka with the platform's producer
  (`apm.kafka`, acks=all, idempotent), each key read back with its value after the heal; no
  stored windows (windows 0 / 0). Time to recover = from the heal until kafka-1 is back in
  the ISR of every partition. The majority side keeps acknowledging while the cut lasts (the
  records acked during the cut, and the seconds until the quorum fenced kafka-1, are in its
  notes).
- Shard: the stopped shard's status row goes stale after 30 s; from then on its query is
  `not-covered` (API, queries page), the health page and `apm aggregator status` list its metric
  as not covered, and the status recomputes its lag from the checkpoint, which grows.
"""


def rows(figures: dict[str, dict[str, Any]]) -> list[list[object]]:
    head: list[object] = [
        "fault",
        "load held (samples/s accepted / offered)",
        "retries",
        "time to recover (s)",
        "what recovered",
        "samples lost",
        "counted twice",
        "windows wrong / windows",
        "converge (s)",
        "dashboard reads failed / reads",
        "fresh again after (s)",
    ]
    out = [head]
    for name in sorted(figures, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
        f = figures[name]
        out.append(
            [
                name,
                f"{f['accepted_per_s']:,.0f} / {f['offered_per_s']:,.0f}",
                f["retries"],
                f"{f['recover_s']:.1f}",
                f["recovery"],
                f["samples_lost"],
                f["samples_extra"],
                f"{f['windows_wrong']} / {f['windows']}",
                f"{f['converge_s']:.1f}",
                f"{f.get('reads_failed', '-')} / {f.get('reads', '-')}",
                "never" if f.get("fresh_after_s") is None else f"{f['fresh_after_s']:.1f}",
            ]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    from launch.cluster.layout import ClusterLayout

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=Path, help="default var/cluster/faults.json")
    parser.add_argument("--command", default=COMMAND, help="the command, for the section")
    parser.add_argument(
        "--tier-time", help="how long make test-cluster took (e.g. '12 min 10 s'), for the notes"
    )
    args = parser.parse_args(argv)
    path = args.figures or ClusterLayout().var / "faults.json"
    try:
        figures = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"bench.faults: no figures in {path} ({exc}); run make test-cluster", file=sys.stderr)
        return 1
    extra = "\n".join(
        f"- {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(f.get("notes", {}).items()))
        for name, f in figures.items()
        if f.get("notes")
    )
    tier = (
        f"\n`make test-cluster` took {args.tier_time} in all (cluster up from empty data "
        "directories, the eight faults, cluster down).\n"
        if args.tier_time
        else ""
    )
    notes = NOTES + tier + "\nPer fault (the test's own observations):\n" + extra
    print(write_section("faults", "Faults", args.command, rows(figures), notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
