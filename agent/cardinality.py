"""The agent's cardinality guard (issue 14, item 9): every distinct metric name becomes a Kafka
topic, so names that grow without bound must not be made in the first place.

- Interfaces and mounts that come and go with containers and pods are skipped by default
  (``net_exclude``, ``disk_exclude_fstypes``, ``disk_exclude_mounts``; shell globs).
- DogStatsD tags that look unbounded (ids, uuids, long hex, numbers-only or per-request values)
  are dropped from names by default (``statsd_drop_unbounded_tags``), except for keys in
  ``statsd_tags_keep``.
- At most ``max_metric_names`` distinct names per agent run; a new name past it is refused,
  counted (``agent.names.refused``) and logged once. The agent's own ``agent.*`` names always
  pass: they are what reports the refusals.
"""

from __future__ import annotations

import fnmatch
import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

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
# Tag keys whose values are few however they look (HTTP status codes, ports, shards).
TAGS_KEEP = (
    "status",
    "status_code",
    "http_status",
    "code",
    "port",
    "shard",
    "partition",
    "version",
)

_ID_KEYS = re.compile(
    r"(?:.*[_.\-])?(?:id|ids|uuid|guid|trace|span|session|request|req|user|email|ip|addr"
    r"|client_ip|remote_addr|url|uri|query|nonce|token|timestamp|ts|time)",
    re.IGNORECASE,
)
_UUID = re.compile(
    r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
)
_LONG_HEX = re.compile(r"(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{12,}")
_NUMBERS_ONLY = re.compile(r"[+\-]?[0-9][0-9.:_\-]*")
_TOKEN = re.compile(r"(?=(?:[^0-9]*[0-9]){4})(?=.*[A-Za-z])[A-Za-z0-9_\-+/=]{16,}")


@dataclass(frozen=True)
class Filters:
    """What the host collectors skip; the defaults are the agent's."""

    net_exclude: tuple[str, ...] = NET_EXCLUDE
    disk_exclude_fstypes: tuple[str, ...] = DISK_EXCLUDE_FSTYPES
    disk_exclude_mounts: tuple[str, ...] = DISK_EXCLUDE_MOUNTS


def matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def unbounded_tag(tag: str, keep: Iterable[str] = TAGS_KEEP) -> bool:
    """Whether a DogStatsD tag (``key:value`` or a bare ``value``) looks like it takes a new
    value per request, user or process, and so would make a new metric name each time."""
    key, sep, value = tag.partition(":")
    if not sep:
        key, value = "", tag
    if key and key.lower() in {k.lower() for k in keep}:
        return False
    if key and _ID_KEYS.fullmatch(key):
        return True
    return bool(
        len(value) > 64
        or _UUID.search(value)
        or _LONG_HEX.search(value)
        or _NUMBERS_ONLY.fullmatch(value)
        or _TOKEN.search(value)
    )


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
