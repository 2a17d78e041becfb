"""Hosts on this machine (launch.cluster.hosts): the plan of names and link-local addresses
(unit), and real namespaces (marker ``cluster``, root): three hosts reach each other by name on
their 169.254 addresses through a TCP echo in each, and removing the tier leaves nothing, also
after a run that never removed it."""

from __future__ import annotations

import ipaddress
import os
import signal
import uuid
from collections.abc import Iterator

import pytest

from launch.cluster.hosts import NETNS_ETC, PREFIX, Hosts, namespaces, plan, render_hosts_file
from launch.cluster.hosts import sweep as sweep_hosts
from tests.support.netns import EchoHosts, require_netns

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
    assert hosts.hosts.run("agent-1", ["cat", "/etc/hosts"]).stdout == render_hosts_file(
        plan(hosts.hosts.tier, NAMES)
    )


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
