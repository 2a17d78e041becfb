"""Network faults between the hosts of a tier (launch.cluster.hosts), named by host, not by
command: :meth:`Faults.cut` a pair of hosts apart and :meth:`Faults.heal` them, or
:meth:`Faults.isolate` one host from every other and :meth:`Faults.rejoin` it.

A cut is a packet filter in both hosts' namespaces (nftables: a table ``apm_faults`` per host
whose set ``cut`` holds the addresses it may not exchange packets with). Packets are dropped
silently, as on a real partition: a connection across the cut hangs until its own timeouts
fire, it is not refused. Isolation is a cut from every other host. Every other pair of hosts
stays untouched, and the filters go with the namespaces when the tier is removed, so a crash
leaves none behind.

What this kernel offers decides what can be injected (:func:`supported`): nftables is there;
the ``netem`` qdisc (latency, loss) is not, so slow links need a TCP proxy instead (issue 39).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from launch.cluster.hosts import PREFIX, Hosts

__all__ = ["TABLE", "Faults", "supported"]

TABLE = "apm_faults"
_TIMEOUT_S = 30.0
# One table per host: drop what comes from, or goes to, an address in the set ``cut``.
_RULES = f"""\
table inet {TABLE} {{
  set cut {{ type ipv4_addr; }}
  chain input {{ type filter hook input priority filter; policy accept; ip saddr @cut drop; }}
  chain output {{ type filter hook output priority filter; policy accept; ip daddr @cut drop; }}
}}
"""


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done


def supported() -> dict[str, bool]:
    """Which fault kinds this machine can inject: ``partition`` (nft in a namespace) and
    ``netem`` (latency and loss through ``tc``), probed in a scratch namespace."""
    probe = f"{PREFIX}probe{os.getpid()}"  # swept like any leftover if this process dies
    found = {"partition": False, "netem": False}
    if shutil.which("ip") is None:
        return found
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True, timeout=_TIMEOUT_S)
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        return found
    try:
        inside = ["ip", "netns", "exec", probe]
        if shutil.which("nft"):
            nft = subprocess.run(
                [*inside, "nft", "-f", "-"], input=_RULES, capture_output=True, text=True
            )
            found["partition"] = nft.returncode == 0
        veth = ["ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"]
        if subprocess.run(veth, capture_output=True).returncode == 0:
            tc = [*inside, "tc", "qdisc", "add", "dev", "p0", "root", "netem", "delay", "1ms"]
            found["netem"] = subprocess.run(tc, capture_output=True).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "delete", probe], capture_output=True, timeout=_TIMEOUT_S)
    return found


class Faults:
    """The fault injectors of one tier of hosts (which must be up)."""

    def __init__(self, hosts: Hosts) -> None:
        self.hosts = hosts

    def _nft(self, host: str, *args: str, stdin: str | None = None) -> str:
        return _run(self.hosts.command(host, ["nft", *args]), stdin).stdout

    def _cut_set(self, host: str) -> set[str]:
        """The addresses ``host`` is cut from now (none before its first cut)."""
        try:
            listed = json.loads(self._nft(host, "-j", "list", "set", "inet", TABLE, "cut"))
        except RuntimeError:  # no table yet: nothing is cut
            return set()
        elements: list[str] = []
        for item in listed.get("nftables", []):
            elements += item.get("set", {}).get("elem", [])
        return set(elements)

    def _ensure_table(self, host: str) -> None:
        if subprocess.run(
            self.hosts.command(host, ["nft", "list", "table", "inet", TABLE]),
            capture_output=True,
            timeout=_TIMEOUT_S,
        ).returncode:
            self._nft(host, "-f", "-", stdin=_RULES)

    def _pair(self, a: str, b: str) -> tuple[tuple[str, str], tuple[str, str]]:
        if a == b:
            raise ValueError(f"a host cannot be cut from itself: {a}")
        return (a, self.hosts.address(b)), (b, self.hosts.address(a))

    def cut(self, a: str, b: str) -> None:
        """Hosts ``a`` and ``b`` exchange no packet any more, either way (idempotent)."""
        for host, other in self._pair(a, b):
            self._ensure_table(host)
            self._nft(host, "add", "element", "inet", TABLE, "cut", f"{{ {other} }}")

    def heal(self, a: str, b: str) -> None:
        """Undoes :meth:`cut` of ``a`` and ``b``; a pair that is not cut is left as it is."""
        for host, other in self._pair(a, b):
            if other in self._cut_set(host):
                self._nft(host, "delete", "element", "inet", TABLE, "cut", f"{{ {other} }}")

    def cuts(self) -> set[frozenset[str]]:
        """The pairs of hosts cut apart now, as the hosts' own filters say."""
        by_address = {h.address: name for name, h in self.hosts.hosts.items()}
        return {
            frozenset((name, by_address[addr]))
            for name in self.hosts.hosts
            for addr in self._cut_set(name)
            if addr in by_address
        }

    def heal_all(self) -> None:
        for pair in self.cuts():
            self.heal(*sorted(pair))

    def isolate(self, host: str) -> None:
        """Cuts ``host`` from every other host of the tier: it reaches no one, no one it."""
        for other in self.hosts.hosts:
            if other != host:
                self.cut(host, other)

    def rejoin(self, host: str) -> None:
        """Heals every cut of ``host``."""
        for other in self.hosts.hosts:
            if other != host:
                self.heal(host, other)
