"""The platform's own processes on the multi-node cluster (``apm cluster up`` starts them after
the engines): two ingest replicas behind nginx, one aggregator per shard as an application on
the Spark standalone master, and the dashboard. Each runs with :meth:`ClusterLayout.env`, and
has its pid file and log under ``var/cluster/<node>/``::

    from launch.cluster import platform
    from launch.cluster.layout import ClusterLayout

    layout = ClusterLayout()
    platform.start(layout)          # ingest-1/2, lb, aggregator-0/1, dashboard; waits healthy
    platform.kill9(layout, "ingest-1")
    platform.start_node(layout, "ingest-1")
    platform.stop(layout)

The command lines come from :mod:`launch.processes`, as for ``make run``; only the names,
ports, homes and the environment differ.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from apm.tls import client_context
from launch import processes
from launch.cluster import nginx
from launch.cluster.layout import ClusterLayout
from launch.cluster.node import tree_rss
from launch.probe import http_ok
from launch.processes import ProcessSpec
from launch.supervisor import ManagedProcess, StartError, stop_all

__all__ = [
    "NodeStatus",
    "api_key",
    "dashboard_token",
    "kill9",
    "nodes",
    "start",
    "start_node",
    "status",
    "stop",
    "stop_node",
]

# The ingest drains for up to its shutdown timeout (30 s) on SIGTERM; Spark stops in seconds.
STOP_GRACE_S = 40.0
AGGREGATOR_START_S = 300.0  # a Spark application's first plan on a busy 2-core machine


@dataclass(frozen=True)
class NodeStatus:
    name: str
    pid: int | None
    healthy: bool
    rss_bytes: int  # with its children (the aggregator's JVM, nginx's worker)
    log: Path


def _say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def api_key(layout: ClusterLayout) -> str:
    """The ingest key of the cluster (created once in ``var/cluster/ingest.key``, mode 600);
    both replicas read the same keys file."""
    return processes.ingest_key(layout.var, "cluster")[1]


def dashboard_token(layout: ClusterLayout) -> str:
    return processes.dashboard_token(layout.home("dashboard"))


def _lb(layout: ClusterLayout) -> nginx.LbConfig:
    return nginx.LbConfig(
        layout.host,
        layout.lb_port,
        [f"{layout.host}:{p}" for p in layout.ingest_ports],
        layout.home("lb"),
        tls_cert=layout.lb_tls_cert,
        tls_key=layout.lb_tls_key,
    )


def _aggregator_env(layout: ClusterLayout) -> dict[str, str]:
    conf = {
        "spark.cores.max": str(layout.aggregator_cores_max),
        "spark.executor.memory": layout.aggregator_executor_memory,
        # One task slot per application: shuffles sized to it, not to the machine.
        "spark.sql.shuffle.partitions": str(layout.aggregator_cores_max),
        "spark.default.parallelism": str(layout.aggregator_cores_max),
    }
    return {
        "APM_AGGREGATOR_SPARK_MASTER": layout.spark_master_url,
        "APM_AGGREGATOR_SPARK_CONF": json.dumps(conf),
        "APM_AGGREGATOR_DRIVER_MEMORY": layout.aggregator_driver_memory,
        "APM_AGGREGATOR_SOURCE_TASKS": str(layout.aggregator_cores_max),
        "SPARK_LOCAL_IP": layout.host,
    }


def _specs(layout: ClusterLayout) -> dict[str, ProcessSpec]:
    """Every platform node but the lb, in start order."""
    out: dict[str, ProcessSpec] = {}
    keys = layout.var / "ingest.keys"
    for i, port in enumerate(layout.ingest_ports, start=1):
        spec = processes.ingest(port, keys, layout.kafka_bootstrap, host=layout.host)
        out[f"ingest-{i}"] = replace(spec, name=f"ingest-{i}")
    for i, (shard, port) in enumerate(
        zip(layout.aggregator_shard_specs, layout.aggregator_metrics_ports, strict=True)
    ):
        name = f"aggregator-{i}"
        spec = processes.aggregator(
            layout.home(name) / "checkpoint", name=name, shard=shard, metrics_port=port
        )
        out[name] = replace(spec, env=_aggregator_env(layout))
    metrics_urls = ",".join(f"{u}/metrics" for u in layout.ingest_urls)
    out["dashboard"] = processes.dashboard(
        layout.dashboard_port,
        host=layout.host,
        env={"APM_DASHBOARD_INGEST_METRICS_URLS": metrics_urls},
    )
    return out


def nodes(layout: ClusterLayout) -> tuple[str, ...]:
    """The platform's nodes in start order (``stop`` goes the other way)."""
    names = list(_specs(layout))
    return (*names[: len(layout.ingest_ports)], "lb", *names[len(layout.ingest_ports) :])


def _process(layout: ClusterLayout, node: str) -> ManagedProcess:
    if node == "lb":
        cfg = _lb(layout)
        return ManagedProcess("lb", cfg.home, marker=f"-c {cfg.conf}")
    return replace(_specs(layout)[node], name=node).process(layout.home(node))


def _healthy(layout: ClusterLayout, node: str) -> bool:
    if node == "lb":
        tls = client_context(layout.lb_tls_ca) if layout.lb_tls_cert is not None else None
        return http_ok(f"{layout.lb_url}/readyz", context=tls)
    return _specs(layout)[node].ready()


def _env(layout: ClusterLayout, node: str) -> dict[str, str]:
    env = layout.env()
    if node == "dashboard" and not (
        os.environ.get("APM_DASHBOARD_TOKEN") or os.environ.get("APM_DASHBOARD_PASSWORD_HASH")
    ):
        env["APM_DASHBOARD_TOKEN"] = dashboard_token(layout)
    return env


def _wait(
    layout: ClusterLayout, node: str, timeout_s: float, progress: Callable[[str], None] = _say
) -> None:
    def healthy() -> bool:
        return _healthy(layout, node)

    _process(layout, node).wait_healthy(healthy, timeout_s, progress)


def start_node(layout: ClusterLayout, node: str, wait_s: float | None = 120.0) -> ManagedProcess:
    """Starts one platform node unless it runs; with ``wait_s``, waits until it is healthy."""
    proc = _process(layout, node)
    if proc.pid() is None:
        if node == "lb":  # its configuration from this layout (TLS or not), rewritten
            nginx.write(_lb(layout))
            proc.start(nginx.command(_lb(layout)), env=layout.env())
        else:
            spec = _specs(layout)[node]
            spec.start(layout.home(node), env=_env(layout, node), wait_s=None)
    if wait_s:
        _wait(layout, node, wait_s)
    return proc


def start(layout: ClusterLayout, progress: Callable[[str], None] = _say) -> None:
    """Creates the schema (RF 3, from the layout), then starts every platform node and waits
    until each is healthy; on failure stops what it started and raises StartError."""
    from storage.repository import Repository
    from storage.settings import StorageSettings

    settings = StorageSettings(
        hosts=layout.storage_hosts,
        port=layout.cassandra_port,
        replication=layout.storage_replication,
    )
    with Repository.connect(settings):  # creates the keyspace and tables when missing
        progress("schema ready")
    api_key(layout)
    nginx.write(_lb(layout))
    order = nodes(layout)
    try:
        for node in order:
            progress(f"starting {node}")
            slow = node.startswith("aggregator-")
            start_node(layout, node, wait_s=None if slow else 120.0)
        for node in order:
            if node.startswith("aggregator-"):
                _wait(layout, node, AGGREGATOR_START_S, progress)
                progress(f"{node} healthy")
    except (StartError, OSError):
        stop(layout)
        raise


def stop_node(layout: ClusterLayout, node: str, grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM (SIGKILL after the grace); True when it was running."""
    return _process(layout, node).stop(grace_s)


def kill9(layout: ClusterLayout, node: str) -> int | None:
    """SIGKILL to the node's whole process group (the aggregator's JVM and nginx's worker
    die with it); the pid it went to, or None when it was not running."""
    proc = _process(layout, node)
    pid = proc.pid()
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        proc.finish(pid)
    return pid


def stop(layout: ClusterLayout, grace_s: float = STOP_GRACE_S) -> None:
    """Stops every platform node within one shared grace (dashboard first, ingest last, so
    the replicas drain what they accepted)."""
    procs = [_process(layout, node) for node in reversed(nodes(layout))]
    for name, outcome in stop_all(procs, grace_s).items():
        _say(f"stopped {name}{' (killed after the grace)' if outcome == 'killed' else ''}")


def status(layout: ClusterLayout) -> list[NodeStatus]:
    rows = []
    for node in nodes(layout):
        proc = _process(layout, node)
        pid = proc.pid()
        healthy = pid is not None and _healthy(layout, node)
        rss = tree_rss(pid) if pid is not None else 0
        rows.append(NodeStatus(node, pid, healthy, rss, proc.log))
    return rows
