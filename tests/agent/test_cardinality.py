"""The cardinality guard (issue 14, item 9): unbounded DogStatsD tags are dropped from names by
default, per-container interfaces and per-pod mounts are skipped, and the agent admits at most
``max_metric_names`` distinct names, counting (and logging once) what it refuses."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace as NS

import pytest

from agent.cardinality import unbounded_tag
from agent.collectors import CollectorContext
from agent.collectors.disk import DiskCollector
from agent.collectors.network import NetworkCollector
from agent.exposition import render
from agent.runner import Agent
from agent.statsd import StatsdAggregator

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "tag",
    [
        "request_id:7f3a",
        "trace_id:abc",
        "user_id:42",
        "id:3",
        "session:x",
        "uuid:123e4567-e89b-12d3-a456-426614174000",
        "job:123e4567e89b12d3a456426614174000",
        "commit:deadbeefcafe1234",
        "order:918273645",
        "ts:1763800000",
        "client:10.1.2.3",
        "pod:web-7f9c8d6b5-x2k4q",
        "path:" + "a" * 80,
        "918273645",
    ],
)
def test_unbounded_looking_tags(tag) -> None:
    assert unbounded_tag(tag)


@pytest.mark.parametrize(
    "tag",
    [
        "env:prod",
        "region:eu-west-1",
        "host:web-1",
        "status:200",
        "version:1.2.3",
        "canary",
        "paid:yes",
    ],
)
def test_bounded_tags_are_kept(tag) -> None:
    assert not unbounded_tag(tag)


def test_statsd_drops_unbounded_tags_from_names_by_default(clock) -> None:
    aggregator = StatsdAggregator(clock)
    for i in range(50):  # fifty requests, fifty ids: one name, not fifty
        aggregator.ingest(f"rpc.calls:1|c|#env:prod,request_id:{i:08x}{i},status:200".encode())
    clock.advance(1)
    [(_, metrics)] = aggregator.flush(clock())
    assert metrics == {"rpc.calls.env_prod.status_200": 50.0}
    assert aggregator.tags_dropped == 50


def test_statsd_keeps_every_tag_when_told(clock) -> None:
    aggregator = StatsdAggregator(clock, drop_unbounded_tags=False)
    aggregator.ingest(b"rpc.calls:1|c|#request_id:42")
    clock.advance(1)
    [(_, metrics)] = aggregator.flush(clock())
    assert list(metrics) == ["rpc.calls.request_id_42"]


def test_container_interfaces_and_pod_mounts_are_skipped_by_default(fake_psutil, clock) -> None:
    nic = vars(fake_psutil.nics["eth0"])
    for name in ("veth1a2b3c", "docker0", "br-0a1b2c3d4e5f", "cni0", "cali12345", "lo"):
        fake_psutil.nics[name] = NS(**nic)
    net = NetworkCollector(CollectorContext(psutil=fake_psutil))
    net.collect(clock())
    clock.advance(1)
    assert {k.split(".")[1] for k in net.collect(clock())} == {"eth0"}

    mounts = [
        ("/", "ext4"),
        ("/var/lib", "xfs"),
        ("/var/lib/kubelet/pods/0b1c/volumes/kubernetes.io~csi/pvc-1/mount", "ext4"),
        ("/var/lib/docker/overlay2/ab12/merged", "overlay"),
        ("/run/user/1000", "tmpfs"),
        ("/snap/core20/2015", "squashfs"),
        ("/data", "overlay"),
    ]
    fake_psutil.disk_partitions = lambda all=False: [
        NS(mountpoint=m, device="/dev/x", fstype=t) for m, t in mounts
    ]
    fake_psutil.disk_usage = lambda path: NS(percent=1.0)
    disk = DiskCollector(CollectorContext(psutil=fake_psutil))
    assert sorted(k for k in disk.collect(clock()) if k.startswith("disk.mount.")) == [
        "disk.mount.root.used_pct",
        "disk.mount.var_lib.used_pct",
    ]


def test_new_metric_names_past_the_limit_are_refused_counted_and_logged_once(
    make_settings, fake_psutil, make_http, clock, caplog
) -> None:
    agent = Agent(
        make_settings(collectors=["load", "agent"], max_metric_names=5, metrics_port=0),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(),
    )
    assert agent.aggregator is not None
    with caplog.at_level(logging.WARNING, logger="agent.cardinality"):
        for second in range(3):
            agent.aggregator.ingest(
                "\n".join(f"app.m{second}_{i}:1|ms" for i in range(10)).encode()
            )
            clock.advance(1)
            agent.tick(clock())
    names = set()
    for record in agent.spool.peek(1000, 1 << 30):
        names.update(json.loads(record)["metrics"])
    app = {n for n in names if n.startswith("app.")}
    load = {n for n in names if n.startswith("load.")}
    assert len(app) + len(load) == 5  # three load.* names, then two of the app's
    assert "agent.names.refused" in names  # the agent's own names always pass
    assert agent.stats.names_refused == 28 and agent.stats.names_known == 5
    assert len([r for r in caplog.records if "max_metric_names" in r.getMessage()]) == 1
    assert "apm_agent_metric_names_refused_total 28.0" in render(agent.stats, agent.spool)
