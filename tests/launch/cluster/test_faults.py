"""Network faults between hosts (launch.cluster.faults), on real namespaces (marker
``cluster``, root): a cut pair stops reaching each other both ways while every other pair goes
on; a heal brings it back; an isolated host is unplugged from everyone; removing the tier
leaves no namespace and no filter behind."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from launch.cluster.faults import TABLE, Faults, supported
from launch.cluster.hosts import PREFIX, Hosts, namespaces
from tests.support.netns import EchoHosts, require_netns

pytestmark = pytest.mark.cluster

NAMES = ["broker-1", "broker-2", "client-1"]


@pytest.fixture
def tier() -> Iterator[tuple[EchoHosts, Faults]]:
    require_netns()
    name = "t" + uuid.uuid4().hex[:8]
    with EchoHosts(Hosts(name, NAMES)) as echo:
        yield echo, Faults(echo.hosts)
    assert not [
        n for n in namespaces() if n == f"{PREFIX}{name}" or n.startswith(f"{PREFIX}{name}-")
    ]


def _reachable(echo: EchoHosts) -> set[tuple[str, str]]:
    """Every ordered pair (a, b) such that a reaches b by name right now."""
    out = set()
    for a in NAMES:
        for b, answer in echo.reach(a, [n for n in NAMES if n != a], timeout_s=0.5).items():
            if answer["ok"]:
                assert answer["by"] == b
                out.add((a, b))
    return out


ALL = {(a, b) for a in NAMES for b in NAMES if a != b}


def test_this_machine_can_partition() -> None:
    """What the fault layer is built on. netem is only reported: this machine has none, which
    is why slow links are to come from a TCP proxy, but a machine with it is no defect."""
    require_netns()
    found = supported()
    assert found["partition"] is True and isinstance(found["netem"], bool)


def test_a_cut_pair_stops_reaching_each_other_and_a_heal_brings_it_back(
    tier: tuple[EchoHosts, Faults],
) -> None:
    echo, faults = tier
    assert _reachable(echo) == ALL
    faults.cut("broker-1", "broker-2")
    faults.cut("broker-1", "broker-2")  # idempotent
    assert faults.cuts() == {frozenset(("broker-1", "broker-2"))}
    # broker-1 is cut from its peer, not from its client
    assert _reachable(echo) == ALL - {("broker-1", "broker-2"), ("broker-2", "broker-1")}
    answer = echo.reach("broker-1", ["broker-2"], timeout_s=0.5)["broker-2"]
    assert answer == {"ok": False, "error": "TimeoutError"}  # dropped, as on a partition
    faults.heal("broker-2", "broker-1")  # either order
    faults.heal("broker-1", "broker-2")  # healing what is not cut changes nothing
    assert faults.cuts() == set()
    assert _reachable(echo) == ALL


def test_heal_all_ends_every_cut(tier: tuple[EchoHosts, Faults]) -> None:
    echo, faults = tier
    faults.cut("broker-1", "client-1")
    faults.cut("broker-2", "client-1")
    assert _reachable(echo) == {("broker-1", "broker-2"), ("broker-2", "broker-1")}
    faults.heal_all()
    assert faults.cuts() == set() and _reachable(echo) == ALL


def test_an_isolated_host_reaches_no_one_until_it_rejoins(tier: tuple[EchoHosts, Faults]) -> None:
    echo, faults = tier
    faults.isolate("client-1")
    assert _reachable(echo) == {("broker-1", "broker-2"), ("broker-2", "broker-1")}
    faults.rejoin("client-1")
    assert _reachable(echo) == ALL


def test_a_host_is_not_cut_from_itself_and_unknown_hosts_are_named(
    tier: tuple[EchoHosts, Faults],
) -> None:
    _, faults = tier
    with pytest.raises(ValueError, match="itself"):
        faults.cut("broker-1", "broker-1")
    with pytest.raises(KeyError, match="no host 'broker-9'"):
        faults.cut("broker-1", "broker-9")
    # the filters live in the hosts' namespaces, which the tier's removal takes with it
    faults.cut("broker-1", "broker-2")
    ruleset = faults.hosts.run("broker-1", ["nft", "list", "ruleset"]).stdout
    assert f"table inet {TABLE}" in ruleset
