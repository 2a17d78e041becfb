"""Host collectors against a fake psutil with canned values (wrap and reset included), and
once against the real host."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from agent.collectors import (
    REGISTRY,
    CollectorContext,
    CounterRates,
    DuplicateCollectorError,
    Registry,
    UnknownCollectorError,
)
from agent.collectors.cpu import CpuCollector
from agent.collectors.disk import DiskCollector
from agent.collectors.network import NetworkCollector
from agent.collectors.system import SystemCollector, count_tcp_states
from agent.stats import AgentStats

pytestmark = pytest.mark.unit


def test_registry_refuses_a_duplicate_name() -> None:
    registry = Registry()
    registry.add("cpu", CpuCollector)
    with pytest.raises(DuplicateCollectorError, match="cpu"):
        registry.add("cpu", DiskCollector)


def test_registry_names_unknown_collectors(fake_psutil) -> None:
    with pytest.raises(UnknownCollectorError, match="gpu"):
        REGISTRY.create(["cpu", "gpu"], CollectorContext(psutil=fake_psutil))


def test_cpu_shares_from_time_deltas(fake_psutil, clock) -> None:
    cpu = CpuCollector(CollectorContext(psutil=fake_psutil))
    assert cpu.collect(clock()) == {}  # no history yet: no shares
    # core 0: +60 user, +20 system, +10 idle, +10 iowait; core 1: all idle.
    fake_psutil.cores[0].user += 60
    fake_psutil.cores[0].system += 20
    fake_psutil.cores[0].idle += 10
    fake_psutil.cores[0].iowait += 10
    fake_psutil.cores[1].idle += 100
    clock.advance(1)
    out = cpu.collect(clock())
    assert out["cpu.core.0.util"] == pytest.approx(80.0)
    assert out["cpu.core.0.user"] == pytest.approx(60.0)
    assert out["cpu.core.0.system"] == pytest.approx(20.0)
    assert out["cpu.core.0.iowait"] == pytest.approx(10.0)
    assert out["cpu.core.1.util"] == pytest.approx(0.0)
    assert out["cpu.util"] == pytest.approx(40.0)
    assert out["cpu.iowait"] == pytest.approx(5.0)


def test_cpu_field_going_backwards_never_gives_a_negative_share(fake_psutil, clock) -> None:
    cpu = CpuCollector(CollectorContext(psutil=fake_psutil))
    cpu.collect(clock())
    fake_psutil.cores[0].iowait -= 5  # the kernel's iowait quirk
    fake_psutil.cores[0].user += 50
    fake_psutil.cores[0].idle += 50
    clock.advance(1)
    out = cpu.collect(clock())
    assert out["cpu.core.0.iowait"] == 0.0
    assert out["cpu.core.0.util"] == pytest.approx(50.0)
    assert all(v >= 0 for v in out.values())


@pytest.mark.parametrize(
    ("last", "value", "delta"),
    [
        (100.0, 150.0, 50.0),  # ordinary increase
        (2**32 - 100.0, 50.0, 150.0),  # 32-bit wrap
        (2.0**64 - 2.0**20, 24.0, 2.0**20 + 24),  # 64-bit wrap (values exact in a float)
        (5_000_000.0, 300.0, 300.0),  # reset: counts since restart from zero
    ],
)
def test_counter_rates_survive_wrap_and_reset(last: float, value: float, delta: float) -> None:
    rates = CounterRates()
    assert rates.rate("x", last, 10.0) is None
    assert rates.rate("x", value, 12.0) == pytest.approx(delta / 2)


def test_network_rates_per_interface_with_wrap_and_reset(fake_psutil, clock) -> None:
    from agent.cardinality import Filters

    net = NetworkCollector(CollectorContext(psutil=fake_psutil, filters=Filters(net_exclude=())))
    fake_psutil.nics["eth0"].bytes_recv = 2.0**32 - 1000
    fake_psutil.nics["eth0"].bytes_sent = 9e9
    net.collect(clock())
    fake_psutil.nics["eth0"].bytes_recv = 3000.0  # wrapped
    fake_psutil.nics["eth0"].bytes_sent = 700.0  # interface re-created: reset
    fake_psutil.nics["eth0"].dropin += 4
    fake_psutil.nics["veth@if3"] = NS(**vars(fake_psutil.nics["lo"]))  # appears: no rate yet
    clock.advance(1)
    out = net.collect(clock())
    assert out["net.eth0.rx_bytes"] == pytest.approx(4000.0)
    assert out["net.eth0.tx_bytes"] == pytest.approx(700.0)
    assert out["net.eth0.rx_drops"] == pytest.approx(4.0)
    assert out["net.lo.rx_bytes"] == 0.0
    assert not any(k.startswith("net.veth") for k in out)
    clock.advance(1)
    assert "net.veth_if3.rx_bytes" in net.collect(clock())


def test_disk_usage_per_mount_and_io_rates(fake_psutil, clock) -> None:
    disk = DiskCollector(CollectorContext(psutil=fake_psutil))
    first = disk.collect(clock())
    assert first == {"disk.mount.root.used_pct": 42.0, "disk.mount.var_lib.used_pct": 7.5}
    fake_psutil.disk_io.read_bytes += 4096 * 2
    fake_psutil.disk_io.write_count += 10
    clock.advance(2)
    out = disk.collect(clock())
    assert out["disk.io.read_bytes"] == pytest.approx(4096.0)
    assert out["disk.io.write_ops"] == pytest.approx(5.0)
    assert out["disk.io.write_bytes"] == 0.0


def test_disk_without_io_counters_or_with_an_unreadable_mount(fake_psutil, clock, caplog) -> None:
    fake_psutil.disk_io = None
    stats = AgentStats(clock)
    disk = DiskCollector(CollectorContext(psutil=fake_psutil, stats=stats))

    def usage(path: str) -> NS:
        if path == "/var/lib":
            raise PermissionError(13, "denied")
        return NS(percent=1.0)

    fake_psutil.disk_usage = usage
    assert disk.collect(clock()) == {"disk.mount.root.used_pct": 1.0}
    assert disk.collect(clock() + 1) == {"disk.mount.root.used_pct": 1.0}
    # Said once in the log, counted in agent.collector.errors each time.
    assert sum("/var/lib unavailable" in r.getMessage() for r in caplog.records) == 1
    assert stats.collector_errors == 2


def test_tcp_states_from_proc_lines() -> None:
    lines = [
        "   0: 0100007F:ED5F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0",
        "   1: 0100007F:ED5F 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 0 0",
        "   2: 0100007F:ED5F 0100007F:1F91 01 00000000:00000000 00:00000000 00000000 0 0",
        "   3: 0100007F:ED5F 0100007F:1F92 06 00000000:00000000 00:00000000 00000000 0 0",
        "garbage",
    ]
    counts = count_tcp_states(lines)
    assert counts["listen"] == 1 and counts["established"] == 2 and counts["time_wait"] == 1
    assert counts["close_wait"] == 0


def test_system_collector_counts_and_uptime(fake_psutil, clock) -> None:
    system = SystemCollector(CollectorContext(psutil=fake_psutil), tcp_lines=lambda: None)
    out = system.collect(clock())
    assert out["proc.count"] == 123
    assert out["uptime"] == pytest.approx(clock() - fake_psutil.boot)
    assert out["tcp.established"] == 1 and out["tcp.listen"] == 1  # psutil fallback


def test_agent_collector_reports_its_own_state(fake_psutil, clock, tmp_path) -> None:
    from agent.spool import Spool

    spool = Spool(tmp_path, fsync=False)
    spool.append(b"{}")
    stats = AgentStats(clock)
    stats.add("retries", 3)
    context = CollectorContext(psutil=fake_psutil, stats=stats, extra={"spool": spool})
    own = REGISTRY.create(["agent"], context)[0]
    own.collect(clock())
    fake_psutil.own_cpu += 0.01
    clock.advance(1)
    out = own.collect(clock())
    assert out["agent.cpu"] == pytest.approx(1.0)
    assert out["agent.rss"] == fake_psutil.rss
    assert out["agent.spool.depth"] == 1.0
    assert out["agent.push.retries"] == 3.0
    assert out["agent.push.age"] == pytest.approx(1.0)


def test_every_collector_against_the_real_host(clock) -> None:
    import psutil

    context = CollectorContext(psutil=psutil, stats=AgentStats(clock))
    collectors = REGISTRY.create(REGISTRY.names(), context)
    for collector in collectors:
        collector.collect(clock())
    clock.advance(1.0)  # the fake clock: real counters barely moved, rates stay finite
    out: dict[str, float] = {}
    for collector in collectors:
        out.update(collector.collect(clock()))
    assert 0 <= out["mem.util"] <= 100
    assert out["proc.count"] >= 1
    assert out["agent.rss"] > 0
    assert any(k.startswith("net.") and k.endswith(".rx_bytes") for k in out)
    assert all(v >= 0 for v in out.values()), {k: v for k, v in out.items() if v < 0}


def test_netlink_tcp_counts_agree_with_proc(fake_psutil, clock) -> None:
    from agent.collectors.system import proc_tcp_lines
    from agent.collectors.tcpdiag import tcp_state_codes

    codes = tcp_state_codes()
    # Linux always answers sock_diag: a failed request is a defect of ours, not a skip.
    assert codes is not None, "the netlink sock_diag request failed (tcp_state_codes gave None)"
    lines = proc_tcp_lines("/proc")
    assert lines is not None
    by_proc = count_tcp_states(lines)
    via_netlink = SystemCollector(
        CollectorContext(psutil=fake_psutil), tcp_codes=lambda: codes
    ).collect(clock())
    # Sockets come and go between the two reads; listeners are stable enough to compare.
    assert via_netlink["tcp.listen"] == by_proc["listen"]
    assert sum(codes.values()) > 0
