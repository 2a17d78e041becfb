"""Hosts on this machine: each a network namespace of its own, as if it were its own machine.

A tier of hosts (``tier`` names it, so several tiers and test runs can coexist) is:

- one namespace per host, ``apmh-<tier>-<host>``, whose ``eth0`` is one end of a veth pair;
- one namespace of the tier's own, ``apmh-<tier>``, holding the bridge ``lan0`` that every
  pair's other end is plugged into: the hosts' LAN, which nothing else on the machine joins;
- a link-local address per host (169.254.<subnet>.1, .2 ... in 169.254.0.0/16, never any other
  range; ``subnet`` 1 unless given), assigned here in the order the hosts are named;
- one hosts file per host, naming every host of the tier (and the machine's hostname as the
  host itself): ``ip netns exec`` bind-mounts ``/etc/netns/<namespace>/hosts`` over
  ``/etc/hosts``, so a host reaches another by name;
- with ``from_root``, one more veth pair from the machine's own namespace to the bridge, whose
  root end ``apmh-<tier>`` holds 169.254.<subnet>.254/24: the machine's own processes (the test
  client, the platform not yet on hosts) then reach every host at its address, through the
  bridge, and only the hosts' /24 is routed there (169.254.169.254 and the rest of the range
  stay as they were). One such tier per subnet: a second is refused, naming the first.

Every name carries the prefix ``apmh-``, so :func:`sweep` finds what a crashed run left and
removes it; :meth:`Hosts.up` sweeps its own tier first, and :meth:`Hosts.down` is idempotent::

    with Hosts("t1", ["kafka-1", "kafka-2", "agent-1"]) as hosts:   # up(), then down()
        hosts.run("agent-1", ["python3", "-c", "..."])                 # inside agent-1
        proc = hosts.popen("kafka-1", [...])

Root only (``ip netns``). Network faults between these hosts: launch.cluster.faults.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from launch.supervisor import port_in_use

__all__ = [
    "NETNS_ETC",
    "PREFIX",
    "ROOT_HOST",
    "Host",
    "Hosts",
    "bound",
    "plan",
    "render_hosts_file",
    "sweep",
]

PREFIX = "apmh-"
NETWORK = ipaddress.ip_network("169.254.0.0/16")
# 169.254.0.0/24 and 169.254.255.0/24 are reserved (RFC 3927): a tier's hosts are in one /24
# between them, 169.254.<subnet>.1 and up. Never 169.254.169.0/24: a root link there would
# capture 169.254.169.254, the metadata address of cloud machines.
SUBNETS = [n for n in range(1, 255) if n != 169]
MAX_HOSTS = 250  # one /24 inside the link-local range; far more than a tier runs
NETNS_ETC = Path("/etc/netns")
BRIDGE = "lan0"
# The machine's end on a tier's bridge (``from_root``): 169.254.<subnet>.254, past the hosts.
ROOT_HOST = 254
ROOT_PREFIX = 24
_TIER = re.compile(r"[a-z0-9]{1,12}")  # no '-': "apmh-<tier>-" then ends the tier's names
_ROOT_TIER = re.compile(r"[a-z0-9]{1,10}")  # "apmh-<tier>" is a link name then: 15 chars
_HOST = re.compile(r"[a-z][a-z0-9-]{0,30}")  # a hostname label
_TIMEOUT_S = 30.0  # one ip/nft call; they take milliseconds


@dataclass(frozen=True)
class Host:
    name: str  # its name in the hosts file
    address: str  # its link-local IPv4 address
    netns: str  # the namespace it is
    peer: str  # its veth end on the tier's bridge


def _subnet(subnet: int) -> ipaddress.IPv4Network:
    if subnet not in SUBNETS:
        raise ValueError(f"subnet {subnet}: 169.254.<subnet>.0/24 needs 1 to 254, not 169")
    return ipaddress.IPv4Network(f"169.254.{subnet}.0/24")


def plan(tier: str, names: Sequence[str], subnet: int = 1) -> list[Host]:
    """The tier's hosts with their namespaces and addresses; bad names are refused."""
    first = _subnet(subnet).network_address + 1
    if not _TIER.fullmatch(tier):
        raise ValueError(f"tier {tier!r}: 1 to 12 lower-case letters and digits")
    if not names or len(names) > MAX_HOSTS:
        raise ValueError(f"a tier has 1 to {MAX_HOSTS} hosts, not {len(names)}")
    if len(set(names)) != len(names):
        raise ValueError(f"host names repeat: {sorted(names)}")
    for name in names:
        if not _HOST.fullmatch(name) or name.endswith("-"):
            raise ValueError(f"host {name!r}: a hostname label (a-z, 0-9, '-'), up to 31 chars")
    return [
        Host(name, str(first + i), f"{PREFIX}{tier}-{name}", f"h{i}")
        for i, name in enumerate(names)
    ]


def render_hosts_file(hosts: Iterable[Host], own: Host | None = None) -> str:
    """/etc/hosts as every host of the tier sees it: itself and the others by name. In host
    ``own``'s file, the machine's hostname is that host's address too: ``ip netns exec`` keeps
    the machine's hostname, which on a real machine names the machine itself (and Cassandra
    refuses to start where it does not resolve)."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines += [f"{h.address}\t{h.name}" for h in hosts]
    if own is not None:
        lines.append(f"{own.address}\t{socket.gethostname()}")
    return "\n".join(lines) + "\n"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["ip", *args], capture_output=True, text=True, timeout=_TIMEOUT_S, check=check
        )
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"ip {' '.join(args)}: {exc.stderr.strip()}") from exc


def namespaces() -> list[str]:
    """Every network namespace on the machine (``ip netns list``)."""
    listed = _ip("netns", "list").stdout.splitlines()
    return [line.split()[0] for line in listed if line.strip()]


def sweep(tier: str | None = None) -> list[str]:
    """Removes the namespaces (and their /etc/netns files) of ``tier``, or of every tier:
    what a run left behind when it crashed, processes inside them included (killed).
    Removing a namespace removes its veth ends and its packet filters."""
    mine = f"{PREFIX}{tier}" if tier else None

    def ours(name: str) -> bool:
        if mine is None:
            return name.startswith(PREFIX)
        return name == mine or name.startswith(f"{mine}-")

    gone = sorted(n for n in namespaces() if ours(n))
    for name in gone:
        # A process left inside (a crashed run's server) would keep the namespace, and its
        # links, alive after its name is deleted: it goes first.
        for pid in _ip("netns", "pids", name, check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _ip("netns", "delete", name, check=False)  # gone meanwhile: fine
    if NETNS_ETC.is_dir():
        for path in NETNS_ETC.iterdir():
            if ours(path.name):
                shutil.rmtree(path, ignore_errors=True)
    # A root end goes with its peer in the tier's namespace; one whose peer was lost is not.
    for link in _root_links():
        if ours(link):
            _ip("link", "delete", link, check=False)
    left = [n for n in namespaces() if ours(n)]
    if left:
        raise RuntimeError(f"namespaces that would not go: {left}")
    return gone


def _root_links() -> list[str]:
    listed = _ip("-o", "link", "show", check=False).stdout.splitlines()
    return [line.split(":")[1].strip().split("@")[0] for line in listed if line.count(":") >= 2]


def _root_users(mine: ipaddress.IPv4Network) -> list[str]:
    """The machine's own links that hold an address in ``mine``."""
    found = []
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        fields = line.split()
        address = fields[3].split("/")[0] if len(fields) > 3 else ""
        if address and ipaddress.ip_address(address) in mine:
            found.append(fields[1])
    return found


_BIND = "import socket,sys; socket.create_server((sys.argv[1], int(sys.argv[2]))).close()"


def bound(netns: str | None, address: str, port: int) -> bool:
    """Whether ``address``:``port`` is taken (a bind there fails) in namespace ``netns``, or in
    the machine's own when None: the supervisor's check that a port is free, on a host."""
    if netns is None:
        return port_in_use(address, port)
    probe = ["ip", "netns", "exec", netns, sys.executable, "-c", _BIND, address, str(port)]
    return subprocess.run(probe, capture_output=True, timeout=_TIMEOUT_S).returncode != 0


class Hosts:
    """A tier of hosts (see the module's docstring); ``up`` makes them, ``down`` removes them."""

    def __init__(
        self, tier: str, names: Sequence[str], from_root: bool = False, subnet: int = 1
    ) -> None:
        if from_root and not _ROOT_TIER.fullmatch(tier):
            raise ValueError(f"tier {tier!r} reached from the root: 1 to 10 letters and digits")
        self.tier = tier
        self.hosts = {h.name: h for h in plan(tier, names, subnet)}
        self.lan = f"{PREFIX}{tier}"
        self.from_root = from_root
        self.subnet = _subnet(subnet)
        # the machine's end of the root link (from_root)
        self.root_address = str(self.subnet.network_address + ROOT_HOST)

    def __getitem__(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise KeyError(f"no host {name!r} in tier {self.tier}: {sorted(self.hosts)}") from None

    def address(self, name: str) -> str:
        return self[name].address

    def up(self) -> Hosts:
        """Creates the tier from nothing (a leftover of the same tier is swept first)."""
        sweep(self.tier)
        try:
            _ip("netns", "add", self.lan)
            _ip("-n", self.lan, "link", "add", BRIDGE, "type", "bridge")
            _ip("-n", self.lan, "link", "set", BRIDGE, "up")
            for host in self.hosts.values():
                self._add(host, render_hosts_file(self.hosts.values(), own=host))
            if self.from_root:
                self._attach_root()
        except BaseException:
            self.down()
            raise
        return self

    def _add(self, host: Host, hosts_file: str) -> None:
        _ip("netns", "add", host.netns)
        _ip(
            "link", "add", "eth0", "netns", host.netns,
            "type", "veth", "peer", "name", host.peer, "netns", self.lan,
        )  # fmt: skip
        _ip("-n", self.lan, "link", "set", host.peer, "master", BRIDGE, "up")
        _ip("-n", host.netns, "link", "set", "lo", "up")
        _ip("-n", host.netns, "addr", "add", f"{host.address}/{NETWORK.prefixlen}", "dev", "eth0")
        _ip("-n", host.netns, "link", "set", "eth0", "up")
        etc = NETNS_ETC / host.netns
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text(hosts_file)

    def _attach_root(self) -> None:
        users = _root_users(self.subnet)
        if users:
            raise RuntimeError(
                f"{', '.join(users)} already holds an address in {self.subnet}: another tier "
                "is reached from the root there (launch.cluster.hosts.sweep() ends it)"
            )
        link = self.lan  # "apmh-<tier>": a link in the root, the tier's namespace in ip netns
        _ip("link", "add", link, "type", "veth", "peer", "name", "root0", "netns", self.lan)
        _ip("-n", self.lan, "link", "set", "root0", "master", BRIDGE, "up")
        _ip("addr", "add", f"{self.root_address}/{ROOT_PREFIX}", "dev", link)
        _ip("link", "set", link, "up")

    def exists(self) -> bool:
        """Every namespace of the tier is there (and the root's link, with ``from_root``)."""
        present = set(namespaces())
        wanted = {self.lan, *(h.netns for h in self.hosts.values())}
        return wanted <= present and (not self.from_root or self.lan in _root_links())

    def down(self) -> list[str]:
        """Removes every namespace and file of the tier; nothing to remove is fine."""
        return sweep(self.tier)

    def command(self, name: str, argv: Sequence[str]) -> list[str]:
        """``argv`` as run inside host ``name`` (its network, its /etc/hosts)."""
        return ["ip", "netns", "exec", self[name].netns, *argv]

    def run(
        self, name: str, argv: Sequence[str], timeout: float = 60.0, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``argv`` inside host ``name`` to completion (text output captured)."""
        kwargs.setdefault("capture_output", True)
        return subprocess.run(self.command(name, argv), text=True, timeout=timeout, **kwargs)

    def popen(self, name: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Starts ``argv`` inside host ``name``; the caller stops and reaps it."""
        return subprocess.Popen(self.command(name, argv), **kwargs)

    def __enter__(self) -> Hosts:
        return self.up()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.down()
