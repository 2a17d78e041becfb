"""Partition sizes of the per-server tables at 10,000 servers (docs/storage.md, "Per-server
series"): one partition of each written into a keyspace of its own, flushed, and sized by
``nodetool tablestats`` ("compacted partition maximum bytes": the upper bound of the bucket of
Cassandra's partition-size histogram, uncompressed); the keyspace is dropped after.

    .venv/bin/python -m bench.storage_sizes
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from typing import Any

from apm.query import WindowResult
from apm.ranking import OTHERS, Ranked
from bench.base import progress, publish
from storage.repository import Repository
from storage.server_tables import server_shard
from storage.settings import StorageSettings

__all__ = ["main"]

COMMAND = ".venv/bin/python -m bench.storage_sizes"
DAY = 86_400
SERVERS = 10_000
VALUES = {"min": 0.5, "max": 97.25, "avg": 41.123456, "p99": 95.5}  # 4 functions
_LOG_LINE = re.compile(r"\d\d:\d\d:\d\d\.\d+ \[")
# What nodetool needs of JDK 17 (the server's own list is in launch.stack.services).
_NODETOOL_JVM = [
    f"--add-exports=java.base/{p}=ALL-UNNAMED" for p in ("sun.nio.ch", "jdk.internal.ref")
]


def _nodetool(*args: str) -> str:
    from launch.stack.config import StackSettings
    from launch.stack.jars import jar_dir

    stack = StackSettings()
    classpath = f"{jar_dir(stack, 'cassandra')}/*"
    command = [stack.java, *_NODETOOL_JVM, "-cp", classpath, "org.apache.cassandra.tools.NodeTool"]
    command += ["-h", "127.0.0.1", "-p", str(stack.cassandra_jmx_port), *args]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout


def _write(repo: Repository, day0: int, now: float) -> None:
    """One shard's day of 10 s windows (the fleet's servers that share web-00001's shard),
    one window of every server, rankings of an hour."""
    shard = server_shard("web-00001.dc1")
    for server in _shard_servers(shard):
        repo.upsert_results(
            WindowResult("q-day", day0 + 10 * i, 10, VALUES, 1000, now, server) for i in range(8640)
        )
    repo.upsert_results(
        WindowResult("q-fleet", day0, 10, VALUES, 1000, now, f"web-{i:05d}.dc1")
        for i in range(SERVERS)
    )
    for n in (100, 10):
        repo.upsert_ranked(
            Ranked(f"q-top{n}", day0 + 10 * k, 10, i + 1, f"web-{i:05d}.dc1", VALUES, 1000, now)
            if i < n
            else Ranked(f"q-top{n}", day0 + 10 * k, 10, i + 1, OTHERS, VALUES, 1000, now)
            for k in range(360)
            for i in range(n + 1)
        )


def _shard_servers(shard: int) -> list[str]:
    names = (f"web-{i:05d}.dc1" for i in range(SERVERS))
    return [name for name in names if server_shard(name) == shard]


def main() -> int:
    keyspace = f"bench_sizes_{uuid.uuid4().hex[:8]}"
    repo = Repository.connect(StorageSettings.model_validate({"keyspace": keyspace}))
    try:
        progress("writing one partition of each per-server table")
        _write(repo, int(time.time() // DAY) * DAY - DAY, round(time.time(), 3))
        progress("nodetool flush, tablestats")
        _nodetool("flush", keyspace)
        out = _nodetool("tablestats", "-F", "json", keyspace)
        # Without a logback file of its own, nodetool logs at DEBUG on stdout too.
        stats: dict[str, Any] = json.loads(
            "\n".join(line for line in out.splitlines() if not _LOG_LINE.match(line))
        )
    finally:
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        repo.close()
    tables = stats[keyspace]["tables"]

    def size(table: str) -> str:
        return f"{tables[table]['compacted_partition_maximum_bytes'] / 1e6:.2f} MB"

    rows = [
        ["table", "largest partition written", "size (<=)"],
        [
            "server_series",
            f"one shard ({len(_shard_servers(server_shard('web-00001.dc1')))} of {SERVERS:,} "
            "servers), one day of 10 s windows (8,640 rows a server)",
            size("server_series"),
        ],
        ["window_servers", f"one window of {SERVERS:,} servers", size("window_servers")],
        ["result_servers", f"one day of {SERVERS:,} servers", size("result_servers")],
        ["rankings", "one hour of 10 s windows at n = 100 (360 rows of 101)", size("rankings")],
    ]
    notes = (
        "4 functions a row; the rankings table also holds an hour at n = 10 (smaller). "
        "Cassandra's guidance: partitions under ~100 MB. How each size scales (window length, "
        "servers, n, functions): docs/storage.md, 'Per-server series'."
    )
    return publish("storage-sizes", "Storage: per-server partition sizes", COMMAND, rows, notes)


if __name__ == "__main__":
    sys.exit(main())
