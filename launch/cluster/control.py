"""``apm cluster up|down|status``: the multi-node engines (and the platform on them) as a unit.

Start order: the hosts of the nodes on hosts of their own (``ClusterLayout.hosts``; made
unless there, removed by ``down`` and after a failed start), the Kafka nodes together (a
quorum needs a majority up), the Cassandra seed, the other Cassandra nodes, the Spark master,
its workers; then ``launch.cluster.platform`` if that module is installed. ``up`` is
idempotent (a healthy node is left alone), prints progress on stderr and fails fast, naming
the failing node's log; what it started is stopped again then. ``kill9`` and ``start_node``
are for the fault tests: a node comes back on the same data dir; ``freeze`` and ``thaw``
(SIGSTOP, SIGCONT) hang a node with its sockets open, the failure that only clients'
timeouts notice.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from launch.cluster import cassandra, kafka, spark
from launch.cluster.layout import ClusterLayout
from launch.cluster.node import Node, tree_rss
from launch.jvm import check_java
from launch.stack.config import StackSettings
from launch.stack.jars import jar_dir
from launch.supervisor import ManagedProcess, StartError, stop_all

__all__ = [
    "NodeStatus",
    "down",
    "engine_nodes",
    "freeze",
    "kill9",
    "rss_total",
    "start_node",
    "status",
    "thaw",
    "up",
]

GIB = 1024**3


@dataclass(frozen=True)
class NodeStatus:
    name: str
    pid: int | None
    healthy: bool
    rss_bytes: int
    log: str


def _say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def engine_nodes(layout: ClusterLayout, stack: StackSettings | None = None) -> dict[str, Node]:
    """Every engine node by name, in start order."""
    stack = stack or StackSettings()
    found = [
        *kafka.nodes(layout, stack),
        *cassandra.nodes(layout, stack),
        *spark.nodes(layout, stack),
    ]
    return {node.name: node for node in found}


def _groups(layout: ClusterLayout) -> list[tuple[str, ...]]:
    """Nodes started together, and waited for, before the next group."""
    seed, *others = layout.cassandra_nodes
    groups = [layout.kafka_nodes, (seed,), tuple(others), ("spark-master",), layout.spark_workers]
    return [group for group in groups if group]


def _platform() -> ModuleType | None:
    """launch.cluster.platform (ingest replicas, lb, aggregators, dashboard), if installed."""
    try:
        return importlib.import_module("launch.cluster.platform")
    except ModuleNotFoundError as exc:
        if exc.name == "launch.cluster.platform":
            return None
        raise


def _check_jars(stack: StackSettings) -> None:
    for engine in ("kafka", "cassandra"):
        if not any(jar_dir(stack, engine).glob("*.jar")):
            raise StartError(
                f"no {engine} jars in {jar_dir(stack, engine)}: run `make jars` "
                "(or set APM_STACK_JAR_CACHE)"
            )


def _launch(node: Node, progress: Callable[[str], None]) -> ManagedProcess | None:
    """Starts ``node`` unless it runs; the process when this call started it."""
    proc = node.process()
    if proc.pid() is not None:
        return None
    busy = node.busy()
    if busy:
        host, port = busy[0]
        raise StartError(
            f"{node.name}: {host}:{port} is already in use by another process; free it or "
            f"set APM_CLUSTER_* (log: {proc.log})"
        )
    try:
        node.prepare()
        argv = node.argv()
    except (OSError, ValueError, RuntimeError) as exc:
        raise StartError(f"{node.name}: preparing failed: {exc} (log: {proc.log})") from exc
    progress(f"starting {node.name} (log: {proc.log})")
    try:
        proc.start(argv, env=dict(node.env))
    except OSError as exc:
        raise StartError(f"{node.name}: could not start: {exc} (log: {proc.log})") from exc
    return proc


def _wait(
    nodes: Sequence[Node], probe: str, timeout_s: float, progress: Callable[[str], None]
) -> None:
    """Until each node passes ``probe``: "started", "healthy" or "joined"."""
    for node in nodes:
        check = {"started": node.is_started, "healthy": node.healthy}.get(probe)
        check = check or node.joined or node.healthy
        node.process().wait_healthy(check, timeout_s, progress)


def _engine(name: str) -> str:
    """``cassandra-2`` -> ``cassandra``, ``spark-worker-1`` -> ``spark-worker``."""
    return name.rsplit("-", 1)[0]


def up(
    layout: ClusterLayout | None = None, progress: Callable[[str], None] = _say
) -> list[NodeStatus]:
    """Starts what is not running, waits until every node is healthy, then the platform."""
    layout = layout or ClusterLayout()
    stack = StackSettings()
    check_java(stack)
    _check_jars(stack)
    nodes = engine_nodes(layout, stack)
    t0 = time.monotonic()
    started: list[ManagedProcess] = []
    tier = layout.tier()
    made_tier = tier is not None and not tier.exists()
    try:
        if tier is not None and made_tier:
            tier.up()
            where = ", ".join(f"{h.name} {h.address}" for h in tier.hosts.values())
            progress(f"hosts of tier {tier.tier} up: {where}")
        for group in _groups(layout):
            members = [nodes[name] for name in group]
            for node in members:
                if (proc := _launch(node, progress)) is not None:
                    started.append(proc)
            _wait(members, "started", layout.start_timeout_s, progress)
            progress(f"{', '.join(group)} up after {time.monotonic() - t0:.1f}s")
        # Membership: each broker live in the quorum, each Cassandra node sees the others.
        _wait(list(nodes.values()), "healthy", layout.start_timeout_s, progress)
        _wait(list(nodes.values()), "joined", layout.start_timeout_s, progress)
        progress(f"engines healthy after {time.monotonic() - t0:.1f}s")
    except BaseException:
        progress(f"stopping {', '.join(p.name for p in started) or 'nothing'} after a failed start")
        stop_all(list(reversed(started)), layout.stop_timeout_s)
        if tier is not None and made_tier:
            tier.down()
        raise
    if (platform := _platform()) is not None:
        platform.start(layout)
        progress(f"platform up after {time.monotonic() - t0:.1f}s")
    else:
        progress("launch.cluster.platform is not installed: engines only")
    return status(layout)


def down(layout: ClusterLayout | None = None, progress: Callable[[str], None] = _say) -> None:
    """The platform, then Spark, Cassandra and Kafka, each tier within one bounded grace."""
    layout = layout or ClusterLayout()
    if (platform := _platform()) is not None:
        platform.stop(layout)
    nodes = engine_nodes(layout)
    for tier in (
        ("spark-master", *layout.spark_workers),
        layout.cassandra_nodes,
        layout.kafka_nodes,
    ):
        # Workers before the master, so no worker spends the grace reconnecting.
        procs = [nodes[name].process() for name in reversed(tier)]
        for name, outcome in stop_all(procs, layout.stop_timeout_s).items():
            progress(f"stopped {name} ({outcome})")
    if (hosts := layout.tier()) is not None:  # its nodes are stopped: the hosts go
        progress(f"removed the hosts {', '.join(hosts.down()) or '(none were left)'}")


def _row(node: Node) -> NodeStatus:
    proc = node.process()
    pid = proc.pid()
    healthy = pid is not None and node.healthy()
    return NodeStatus(node.name, pid, healthy, tree_rss(pid) if pid else 0, str(proc.log))


def status(layout: ClusterLayout | None = None) -> list[NodeStatus]:
    """Each engine node, then the platform's processes (launch.cluster.platform.status, rows
    with the same fields): pid, health, resident memory with children, log."""
    layout = layout or ClusterLayout()
    rows = [_row(node) for node in engine_nodes(layout).values()]
    platform = _platform()
    if platform is not None and hasattr(platform, "status"):
        rows += [
            NodeStatus(r.name, r.pid, bool(r.healthy), int(r.rss_bytes), str(r.log))
            for r in platform.status(layout)
        ]
    return rows


def rss_total(rows: Sequence[NodeStatus]) -> int:
    return sum(row.rss_bytes for row in rows)


def _pick(nodes: dict[str, Node], name: str) -> Node:
    if name not in nodes:
        raise KeyError(f"no engine node {name!r}; the nodes are {', '.join(nodes)}")
    return nodes[name]


def kill9(name: str, layout: ClusterLayout | None = None, timeout_s: float = 10.0) -> int:
    """SIGKILL to the node's process group (a Spark worker's executors die with it, as when
    its machine fails); returns the pid. The data dir stays for ``start_node``."""
    layout = layout or ClusterLayout()
    node = _pick(engine_nodes(layout), name)
    proc = node.process()
    pid = proc.pid()
    if pid is None:
        raise StartError(f"{name} is not running (log: {proc.log})")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    # A killed process's command line empties before the kernel closes its sockets, so "gone"
    # alone let an immediate start_node find its ports still in use: wait for both.
    while time.monotonic() < deadline and (not proc.gone(pid) or node.busy()):
        time.sleep(0.05)
    proc.pidfile.unlink(missing_ok=True)
    return pid


def freeze(name: str, layout: ClusterLayout | None = None) -> int:
    """SIGSTOP to the node's process group: it hangs, its sockets stay open (connections are
    accepted by the kernel and never answered). Returns the pid; ``thaw`` undoes it."""
    return _signal(name, signal.SIGSTOP, layout)


def thaw(name: str, layout: ClusterLayout | None = None) -> int:
    """SIGCONT to a node ``freeze`` stopped."""
    return _signal(name, signal.SIGCONT, layout)


def _signal(name: str, sig: signal.Signals, layout: ClusterLayout | None) -> int:
    node = _pick(engine_nodes(layout or ClusterLayout()), name)
    proc = node.process()
    pid = proc.pid()
    if pid is None:
        raise StartError(f"{name} is not running (log: {proc.log})")
    os.killpg(pid, sig)
    return pid


def start_node(
    name: str,
    layout: ClusterLayout | None = None,
    progress: Callable[[str], None] = _say,
    wait: bool = True,
) -> int:
    """Starts one engine node again on its data dir; with ``wait``, until it is healthy and,
    when every node of its engine runs, has rejoined (sees them all up). Returns its pid."""
    layout = layout or ClusterLayout()
    _check_jars(StackSettings())
    nodes = engine_nodes(layout)
    node = _pick(nodes, name)
    _launch(node, progress)
    proc = node.process()
    if wait:
        siblings = [n for n in nodes.values() if _engine(n.name) == _engine(name)]
        everyone = all(n.process().pid() is not None for n in siblings)
        _wait([node], "joined" if everyone else "healthy", layout.start_timeout_s, progress)
    pid = proc.pid()
    if pid is None:
        raise StartError(f"{name} exited during start-up; log: {proc.log}")
    return pid
