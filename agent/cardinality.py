"""The agent's cardinality guard (issue 14, item 9): every distinct metric name becomes a Kafka
topic, so names that grow without bound must not be made in the first place.

- Interfaces and mounts that come and go with containers and pods are skipped by default
  (``net_exclude``, ``disk_exclude_fstypes``, ``disk_exclude_mounts``; shell globs).
- DogStatsD tags that look unbounded (ids, uuids, long hex, numbers-only or per-request values)
  are dropped from names by default (``statsd_drop_unbounded_tags``), except for keys in
  ``statsd_tags_keep`` (the rule is :mod:`apm.labels`, shared with the ingest's OTLP and
  remote_write intake).
- At most ``max_metric_names`` distinct names per agent run; a new name past it is refused,
  counted (``agent.names.refused``) and logged once. The agent's own ``agent.*`` names always
  pass: they are what reports the refusals.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

# The naming guard is shared with the ingest's OTLP and remote_write intake; re-exported here.
from apm.labels import TAGS_KEEP, unbounded_tag

__all__ = [
    "DISK_EXCLUDE_FSTYPES",
    "DISK_EXCLUDE_MOUNTS",
    "NET_EXCLUDE",
    "TAGS_KEEP",
    "Filters",
    "NameLimit",
    "matches",
    "unbounded_tag",
]

log = logging.getLogger(__name__)

# Loopback, and the virtual interfaces of containers, bridges, overlays and VMs: one per pod
# or container, created and destroyed all day.
NET_EXCLUDE = (
    "lo",
    "veth*",
    "docker*",
    "br-*",
    "virbr*",
    "cni*",
    "flannel*",
    "cali*",
    "vxlan*",
    "kube-*",
    "weave*",
    "cilium*",
    "lxc*",
    "tap*",
    "vnet*",
    "dummy*",
    "ifb*",
    "tunl*",
    "genev_sys*",
)
# Filesystems that hold no disk space of their own, or one per container image layer or snap.
DISK_EXCLUDE_FSTYPES = (
    "overlay",
    "aufs",
    "tmpfs",
    "devtmpfs",
    "ramfs",
    "proc",
    "sysfs",
    "squashfs",
    "nsfs",
    "cgroup",
    "cgroup2",
    "autofs",
    "tracefs",
    "debugfs",
    "securityfs",
    "pstore",
    "bpf",
    "configfs",
    "mqueue",
    "hugetlbfs",
    "devpts",
    "binfmt_misc",
    "fusectl",
    "fuse.lxcfs",
    "rpc_pipefs",
    "efivarfs",
)
# Per-pod, per-container and per-snap mount points, and the kernel's own trees.
DISK_EXCLUDE_MOUNTS = (
    "/proc",
    "/proc/*",
    "/sys",
    "/sys/*",
    "/dev",
    "/dev/*",
    "/run",
    "/run/*",
    "/var/lib/kubelet/*",
    "/var/lib/docker/*",
    "/var/lib/containers/*",
    "/var/lib/lxcfs*",
    "/snap/*",
)


@dataclass(frozen=True)
class Filters:
    """What the host collectors skip; the defaults are the agent's."""

    net_exclude: tuple[str, ...] = NET_EXCLUDE
    disk_exclude_fstypes: tuple[str, ...] = DISK_EXCLUDE_FSTYPES
    disk_exclude_mounts: tuple[str, ...] = DISK_EXCLUDE_MOUNTS


def matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


class NameLimit:
    """Admits at most ``limit`` distinct metric names (0: no limit); refuses the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.known: set[str] = set()
        self.refused = 0
        self._said = False
        self._lock = threading.Lock()

    def admit(self, name: str) -> bool:
        if name in self.known or name.startswith("agent."):
            return True  # the agent's own names are few and fixed, and do not count
        with self._lock:
            if not self.limit or len(self.known) < self.limit:
                self.known.add(name)
                return True
            self.refused += 1
            if not self._said:
                self._said = True
                log.warning(
                    "max_metric_names (%d) reached: new metric names such as %r are refused "
                    "and counted in agent.names.refused (said once)",
                    self.limit,
                    name[:200],
                )
            return False
