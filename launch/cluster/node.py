"""One engine node of the cluster: how to prepare it, its command, environment and health.

kafka.py, cassandra.py and spark.py each build their nodes from a layout; control.py runs them
as :class:`launch.supervisor.ManagedProcess` es under ``var/cluster/<node>/``. A node on a host
of its own (``netns``) is started inside that host's network namespace (``ip netns exec``,
which execs the command: the pid, its marker and its process group stay the command's own),
and its ports are checked for use there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from launch.cluster.hosts import bound
from launch.supervisor import ManagedProcess

__all__ = ["Node", "marker", "override_lines", "tree_rss"]


def marker(node: str) -> str:
    """The JVM property that proves a pid is this node (the stack's own JVMs carry
    ``-Dapm.stack=kafka`` and ``-Dapm.stack=cassandra``, which this never contains)."""
    return f"-Dapm.stack=cluster-{node}"


@dataclass(frozen=True)
class Node:
    name: str
    home: Path
    addresses: tuple[tuple[str, int], ...]  # (host, port) pairs it listens on
    prepare: Callable[[], None]
    command: Callable[[], list[str]]
    healthy: Callable[[], bool]  # serving and a member of its cluster
    env: Mapping[str, str] = field(default_factory=dict)
    # Serving, whether or not its peers are there yet (a Cassandra seed before the others
    # join); None: the same as healthy.
    started: Callable[[], bool] | None = None
    # Sees every node of its engine up (a Kafka broker lists all brokers live, a Cassandra
    # node reads at ALL); only asked when all of them run. None: healthy is enough.
    joined: Callable[[], bool] | None = None
    netns: str | None = None  # its host's network namespace; None: the machine's own

    def argv(self) -> list[str]:
        """The command line that starts it: its command, inside its host when it has one."""
        command = self.command()
        return ["ip", "netns", "exec", self.netns, *command] if self.netns else command

    def busy(self) -> list[tuple[str, int]]:
        """Those of its addresses that something holds now, where it would listen."""
        return [(h, p) for h, p in self.addresses if bound(self.netns, h, p)]

    def is_started(self) -> bool:
        return (self.started or self.healthy)()

    def process(self) -> ManagedProcess:
        # The trailing space: "cluster-kafka-1" must not match "cluster-kafka-10".
        return ManagedProcess(self.name, self.home, marker=marker(self.name) + " ")


def override_lines(text: str, values: Mapping[str, str], sep: str) -> str:
    """``text`` (a properties file with ``sep`` '=' or a flat YAML with ``sep`` ': ') with each
    top-level ``key`` of ``values`` set: its line replaced in place, or appended at the end.
    Only unindented lines are keys, so nested YAML values are never touched."""
    lines = text.splitlines()
    pending = dict(values)
    for i, line in enumerate(lines):
        key = line.split(sep.strip(), 1)[0].strip() if not line[:1].isspace() else ""
        if key in pending and not line.lstrip().startswith("#"):
            lines[i] = f"{key}{sep}{pending.pop(key)}"
    if pending:
        lines.append("# cluster node settings (launch/cluster)")
        lines += [f"{key}{sep}{value}" for key, value in pending.items()]
    return "\n".join(lines) + "\n"


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the ppid follows the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def tree_rss(pid: int, children: Callable[[], dict[int, list[int]]] = _children) -> int:
    """Bytes resident of ``pid`` and its descendants (a Spark worker's executors count)."""
    tree = children()
    total, todo, seen = 0, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        total += _rss(current)
        todo += tree.get(current, [])
    return total
