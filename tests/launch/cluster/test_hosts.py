"""Hosts on this machine (launch.cluster.hosts): the plan of names and link-local addresses
(unit), and real namespaces (marker ``cluster``, root): three hosts reach each other by name on
their 169.254 addresses through a TCP echo in each, and removing the tier leaves nothing, also
after a run that never removed it."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from launch.cluster.hosts import NETNS_ETC, PREFIX, Hosts, namespaces, plan, render_hosts_file
from launch.cluster.hosts import sweep as sweep_hosts
from tests.support.netns import ECHO_PORT, EchoHosts, require_netns

NAMES = ["kafka-1", "cassandra-1", "agent-1"]


@pytest.mark.unit
def test_each_host_gets_its_own_link_local_address_and_namespace() -> None:
    hosts = plan("t1", NAMES)
    assert [h.address for h in hosts] == ["169.254.1.1", "169.254.1.2", "169.254.1.3"]
    assert all(ipaddress.ip_address(h.address).is_link_local for h in hosts)
    assert [h.netns for h in hosts] == [f"{PREFIX}t1-{n}" for n in NAMES]
    assert len({h.peer for h in hosts}) == 3
    many = plan("t1", [f"h{i}" for i in range(250)])
    assert all(ipaddress.ip_address(h.address).is_link_local for h in many)
    assert many[-1].address == "169.254.1.250"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("tier", "names", "says"),
    [
        ("T1", NAMES, "tier 'T1'"),
        ("a-b", NAMES, "tier 'a-b'"),
        ("t1", [], "1 to 250 hosts"),
        ("t1", [f"h{i}" for i in range(251)], "1 to 250 hosts, not 251"),
        ("t1", ["a", "a"], "repeat"),
        ("t1", ["Kafka"], "host 'Kafka'"),
        ("t1", ["a/b"], "host 'a/b'"),
        ("t1", ["a-"], "host 'a-'"),
    ],
)
def test_bad_tiers_and_names_are_refused(tier: str, names: list[str], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        plan(tier, names)


@pytest.mark.unit
def test_every_host_reads_one_hosts_file_naming_them_all() -> None:
    text = render_hosts_file(plan("t1", NAMES))
    assert "127.0.0.1\tlocalhost\n" in text
    for line in ("169.254.1.1\tkafka-1", "169.254.1.2\tcassandra-1", "169.254.1.3\tagent-1"):
        assert line in text.splitlines()


@pytest.fixture
def hosts() -> Iterator[EchoHosts]:
    require_netns()
    tier = "t" + uuid.uuid4().hex[:8]
    with EchoHosts(Hosts(tier, NAMES)) as echo:
        yield echo
    assert not [n for n in namespaces() if n.startswith(f"{PREFIX}{tier}")]


@pytest.mark.cluster
def test_three_hosts_reach_each_other_by_name_on_their_addresses(hosts: EchoHosts) -> None:
    for name in NAMES:
        got = hosts.reach(name, [n for n in NAMES if n != name])
        for other, answer in got.items():
            # resolved through the tier's hosts file to the other's link-local address,
            # and answered by the echo inside that host, from that address
            assert answer == {"ok": True, "address": hosts.hosts.address(other), "by": other}
    inside = hosts.hosts.run("agent-1", ["ip", "-4", "-o", "addr", "show", "dev", "eth0"])
    assert "inet 169.254.1.3/16" in inside.stdout
    planned = plan(hosts.hosts.tier, NAMES)
    assert hosts.hosts.run("agent-1", ["cat", "/etc/hosts"]).stdout == render_hosts_file(
        planned, own=planned[2]
    )
    # the machine's hostname, which the host keeps, names the host itself there
    resolve = ["getent", "ahostsv4", socket.gethostname()]
    assert hosts.hosts.run("agent-1", resolve).stdout.split()[0] == "169.254.1.3"


@pytest.mark.cluster
def test_a_tier_left_behind_by_a_crash_is_swept() -> None:
    require_netns()
    tier = "t" + uuid.uuid4().hex[:8]
    left = Hosts(tier, ["a", "b"]).up()  # never taken down, as if the run had died
    server = left.popen("a", ["sleep", "600"])  # and a process of it still inside a host
    mine = {left.lan, left["a"].netns, left["b"].netns}
    assert mine <= set(namespaces())
    again = Hosts(tier, ["a", "b"]).up()  # up() starts from nothing: the leftover goes first
    assert server.wait(10) == -signal.SIGKILL  # it would have held the old namespace alive
    assert sorted(again.down()) == sorted(mine)
    assert not mine & set(namespaces())
    assert not any((NETNS_ETC / n).exists() for n in mine)
    assert sweep_hosts(tier) == []  # nothing left: sweeping again is a no-op


@pytest.mark.cluster
def test_the_host_namespaces_do_not_touch_this_machines_network() -> None:
    """Everything lives in the tier's namespaces: the machine's own links stay as they were."""
    require_netns()
    before = set(os.listdir("/sys/class/net"))
    with Hosts("t" + uuid.uuid4().hex[:8], ["a", "b"]):
        assert set(os.listdir("/sys/class/net")) == before
    assert set(os.listdir("/sys/class/net")) == before


@pytest.mark.unit
def test_a_tier_can_take_another_link_local_subnet_but_never_the_metadata_one() -> None:
    assert [h.address for h in plan("t1", ["a", "b"], subnet=7)] == ["169.254.7.1", "169.254.7.2"]
    assert Hosts("t1", ["a"], from_root=True, subnet=7).root_address == "169.254.7.254"
    for bad in (0, 169, 255):
        with pytest.raises(ValueError, match=f"subnet {bad}"):
            plan("t1", ["a"], subnet=bad)
    with pytest.raises(ValueError, match="reached from the root"):
        Hosts("elevenchars", ["a"], from_root=True)  # "apmh-<tier>" names a link: 15 chars


def _root_reaches(hosts: Hosts, timeout_s: float = 1.0) -> dict[str, str | None]:
    """From this process (the root namespace): the echo's answer of each host, or None."""
    out: dict[str, str | None] = {}
    for name, host in hosts.hosts.items():
        try:
            with socket.create_connection((host.address, ECHO_PORT), timeout=timeout_s) as conn:
                conn.sendall(b"ping")
                out[name] = json.loads(conn.recv(256))["by"]
        except OSError:
            out[name] = None
    return out


@pytest.mark.cluster
def test_a_tier_made_from_the_root_is_reached_from_here_and_leaves_nothing() -> None:
    """The machine's own processes reach the hosts through the tier's root link, which only
    routes the tier's /24; a second tier on that subnet is refused; removal takes the link."""
    require_netns()
    before = set(os.listdir("/sys/class/net"))
    subnet = 200 + uuid.uuid4().int % 50  # not the cluster tier's (1), which may be up
    tier = "r" + uuid.uuid4().hex[:8]
    hosts = Hosts(tier, ["a", "b"], from_root=True, subnet=subnet)
    assert _root_reaches(hosts, 0.3) == {"a": None, "b": None}  # not before it is up
    with EchoHosts(hosts) as echo:
        assert hosts.exists()
        assert _root_reaches(echo.hosts) == {"a": "a", "b": "b"}
        assert set(os.listdir("/sys/class/net")) == before | {hosts.lan}
        routes = subprocess.run(["ip", "-4", "route", "show", "dev", hosts.lan], **_TEXT)
        assert routes.stdout.split()[0] == f"169.254.{subnet}.0/24"  # its /24 only
        with pytest.raises(RuntimeError, match=f"{hosts.lan} already holds an address"):
            Hosts("r" + uuid.uuid4().hex[:8], ["c"], from_root=True, subnet=subnet).up()
        assert _root_reaches(echo.hosts) == {"a": "a", "b": "b"}  # the refusal broke nothing
    assert not hosts.exists()
    assert set(os.listdir("/sys/class/net")) == before


_TEXT: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 30, "check": True}
