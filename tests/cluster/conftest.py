"""One multi-node cluster for the whole ``cluster`` tier, its Kafka brokers on hosts of their
own (``ClusterLayout.hosts``): brought up once through
``launch.cluster.control`` (or a running one reused, and then left running), with one stored
query per fault, each on a metric of its own (its own topic), created before any load so that
both aggregator shards already read them when the faults begin. The load balancer serves
HTTPS with a certificate from a CA the tier makes (tests.support.certs): every push goes to
its https:// URL trusting that CA."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cluster.support import LOAD_S, Load, Watch, wait_for
from tests.support.certs import Ca, make_ca
from tests.support.http import http_json

if TYPE_CHECKING:
    from launch.cluster.layout import ClusterLayout
    from storage.repository import Repository

# fault -> the aggregator shard its metric falls in (shard: the one the test stops).
FAULTS = {
    "kafka": 0,
    "cassandra": 1,
    "spark": 0,
    "ingest": 1,
    "shard": 1,
    "kafkahang": 0,
    "cassandrahang": 1,
    "kafkatwo": 1,
}


@dataclass
class Probe:
    fault: str
    prefix: str  # loadgen --metric-prefix
    metric: str
    shard: int
    query_id: str
    text: str


@dataclass
class Cluster:
    layout: ClusterLayout
    key: str
    token: str
    repo: Repository
    probes: dict[str, Probe] = field(default_factory=dict)

    def read(self, probe: Probe, start: float, end: float) -> list[Any]:
        return list(self.repo.read_results(probe.query_id, start, end))

    def load(self, fault: str, out: Path, seed: int, seconds: int = LOAD_S) -> Load:
        """The fault's load through the load balancer, its probe query watched on the dashboard."""
        p = self.probes[fault]
        watch = Watch(self.layout.dashboard_url, self.token, p.query_id)
        return Load(
            self.layout.lb_url,
            self.key,
            p.text,
            p.prefix,
            out,
            seed,
            seconds,
            watch,
            tls_ca=self.layout.lb_tls_ca,
        )

    def job(self, shard: int) -> str:
        return f"aggregator-shard-{shard}-of-{self.layout.aggregator_shards}"

    def status(self) -> dict[str, dict[str, Any]]:
        return self.repo.get_status()


def _probe(fault: str, shard: int, run: str) -> tuple[str, str]:
    from apm.query_state import shard_of

    for i in range(1000):
        prefix = f"f{run}{fault}{i}."
        if shard_of(metric := f"{prefix}cpu.util", 2) == shard:
            return prefix, metric
    raise AssertionError("no metric name in the shard")  # pragma: no cover


def _healthy(layout: ClusterLayout) -> bool:
    """Every node but the lb (it is started again with this run's certificate) is healthy."""
    from launch.cluster import control, platform

    engines = control.status(layout)
    return all(row.healthy for row in engines) and all(
        row.healthy for row in platform.status(layout) if row.name != "lb"
    )


@pytest.fixture(scope="session")
def lb_ca(tmp_path_factory: pytest.TempPathFactory) -> Ca:
    """The CA of the tier: it signs the load balancer's certificate; clients trust it."""
    return make_ca(tmp_path_factory.mktemp("lb-tls"), "cluster-ca")


@pytest.fixture(scope="session")
def cluster(lb_ca: Ca) -> Iterator[Cluster]:
    from launch.cluster import control, platform
    from launch.cluster.layout import ClusterLayout
    from storage.repository import Repository
    from storage.settings import StorageSettings

    cert, key = lb_ca.issue("lb", cn="localhost")  # also IP 127.0.0.1, the lb's address
    # The brokers on hosts of their own (network namespaces, reached through the tier's root
    # link), whatever APM_CLUSTER_HOSTS says: the network faults need them there. The ring on
    # hosts ("cassandra") is checked on its own so far, not yet under this tier's faults.
    layout = ClusterLayout(hosts=("kafka",), lb_tls_cert=cert, lb_tls_key=key, lb_tls_ca=lb_ca.cert)
    # A running lb may serve plain HTTP or another run's certificate: started again below.
    platform.stop_node(layout, "lb")
    reused = _healthy(layout)
    if not reused:
        control.up(layout)  # engines, then launch.cluster.platform.start; a no-op where up
        platform.start(layout)  # whatever platform process is not running yet
    else:
        platform.start_node(layout, "lb")
    repo = Repository.connect(
        StorageSettings(
            hosts=layout.storage_hosts,
            port=layout.cassandra_port,
            replication=layout.storage_replication,
        )
    )
    try:
        c = Cluster(layout, platform.api_key(layout), platform.dashboard_token(layout), repo)
        run = uuid.uuid4().hex[:6]
        for fault, shard in FAULTS.items():
            prefix, metric = _probe(fault, shard, run)
            text = f"FROM * SELECT {metric} WINDOW 10s COMPUTE min, max, avg, count, sum"
            created = http_json(
                f"{layout.dashboard_url}/api/queries", c.token, body={"text": text}, timeout=5.0
            )
            c.probes[fault] = Probe(fault, prefix, metric, shard, created["id"], text)

        def subscribed() -> bool:
            status = c.status()
            return all(
                p.metric in (status.get(c.job(p.shard), {}).get("reads") or [])
                for p in c.probes.values()
            )

        wait_for(subscribed, 300, "both shards read the fault queries' metrics")
        yield c
        for probe in c.probes.values():  # a kept cluster must not read these topics for ever
            with contextlib.suppress(Exception):
                repo.delete_query(probe.query_id)
    finally:
        repo.close()
        if not reused and not os.environ.get("APM_TEST_KEEP_CLUSTER"):
            control.down(layout)
