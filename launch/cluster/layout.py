"""The tested multi-node layout on one machine (env prefix ``APM_CLUSTER_``).

One frozen settings class holds every address, port and heap of the cluster that
``apm cluster up`` starts (docs/deploy.md leads with it), plus the values derived from them:
the Kafka bootstrap, the Cassandra contact points and replication, the URLs of the load
balancer and the dashboard, and :meth:`ClusterLayout.env`, the ``APM_*`` variables every
platform process on the cluster runs with. compose and k8s are checked against ``env()``.

All state lives under ``var/cluster/<node>/`` (data and ``<node>.log``).

The engines named in ``hosts`` (``kafka``, ``cassandra``) run their nodes on hosts of their
own (network namespaces of the tier ``hosts_tier``, launch.cluster.hosts): each node gets a
169.254.<hosts_subnet>.x address that the tier assigns, in the order of :attr:`hosted`
(both: kafka-1..3 169.254.1.1-3, cassandra-1..3 .4-6), and its engine's standard ports
(Kafka 9092, controller 9093; Cassandra 9042, 7000, JMX 7199 on the host's own loopback),
and every listener, quorum voter, bootstrap address, seed and contact point derives from
those (:meth:`ClusterLayout.address`). The machine's own processes reach the hosts through the
tier's root link. Spark and the platform stay on loopback for now (issue 39).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from apm.settings import PROJECT_ROOT, env_config
from launch.cluster.hosts import Host, Hosts, plan

__all__ = ["ClusterLayout"]


class ClusterLayout(BaseSettings):
    """``APM_CLUSTER_*``; tuples read from the environment as JSON (``[19092, 19093, 19094]``)."""

    model_config = SettingsConfigDict(**{**env_config("APM_CLUSTER_"), "frozen": True})

    root: Path = PROJECT_ROOT
    var_dir: Path | None = Field(default=None, description="state; default <root>/var/cluster")
    host: str = "127.0.0.1"  # Kafka (unless on hosts), Spark and the platform's processes
    # The engines whose nodes run on hosts of their own (network namespaces; root), e.g.
    # APM_CLUSTER_HOSTS='["kafka"]': see the docstring.
    hosts: tuple[Literal["kafka", "cassandra"], ...] = ()
    hosts_tier: str = Field(default="cluster", pattern=r"^[a-z0-9]{1,10}$")
    # the hosts in 169.254.<this>.0/24 (launch.cluster.hosts.SUBNETS: 1 to 254, not 169)
    hosts_subnet: int = Field(default=1, ge=1, le=254)

    # Kafka: combined broker + controller nodes, node ids 1..n, a controller quorum of n. On
    # loopback each has its own ports (their count is the number of brokers); on hosts every
    # broker has the standard ones, kafka_port and kafka_controller_port.
    kafka_broker_ports: tuple[int, ...] = (19092, 19093, 19094)
    kafka_controller_ports: tuple[int, ...] = (19192, 19193, 19194)
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    kafka_heap: str = "512m"
    topic_replication: int = Field(default=3, ge=1)
    min_insync_replicas: int = Field(default=2, ge=1)

    # Cassandra: one node per loopback address, all on the same ports; seed = the first.
    cassandra_hosts: tuple[str, ...] = ("127.0.0.21", "127.0.0.22", "127.0.0.23")
    cassandra_port: int = 9042
    cassandra_storage_port: int = 7000
    cassandra_jmx_ports: tuple[int, ...] = (7211, 7212, 7213)  # on loopback
    cassandra_jmx_port: int = 7199  # on hosts: each node's, on its host's own loopback
    cassandra_heap: str = "768m"
    cassandra_heap_new: str = "192m"
    cassandra_dc: str = "datacenter1"
    cassandra_rack: str = "rack1"

    # Spark standalone, from the jars pyspark ships.
    spark_master_port: int = 17077
    spark_master_ui_port: int = 18080
    spark_worker_ui_ports: tuple[int, ...] = (18081, 18082)
    spark_worker_cores: int = 2
    spark_worker_memory: str = "1536m"
    spark_daemon_heap: str = "256m"

    # The platform on top (launch.cluster.platform).
    aggregator_shards: int = Field(default=2, ge=1)
    aggregator_metrics_ports: tuple[int, ...] = (19102, 19103)
    aggregator_cores_max: int = 1
    aggregator_executor_memory: str = "768m"
    aggregator_driver_memory: str = "768m"
    ingest_ports: tuple[int, ...] = (18001, 18002)
    lb_port: int = 18000
    # TLS at the load balancer (launch.cluster.nginx): with a cert and key it serves https://
    # on lb_port; lb_tls_ca is the CA the cluster's own probes of it trust (else the system's).
    lb_tls_cert: Path | None = None
    lb_tls_key: Path | None = None
    lb_tls_ca: Path | None = None
    dashboard_port: int = 18050

    rss_budget_gib: float = 12.0
    start_timeout_s: float = 240.0
    stop_timeout_s: float = 60.0

    @model_validator(mode="after")
    def _consistent(self) -> ClusterLayout:
        if len(self.kafka_broker_ports) != len(self.kafka_controller_ports):
            raise ValueError("kafka_broker_ports and kafka_controller_ports differ in length")
        if len(self.cassandra_hosts) != len(self.cassandra_jmx_ports):
            raise ValueError("cassandra_hosts and cassandra_jmx_ports differ in length")
        if len(self.aggregator_metrics_ports) != self.aggregator_shards:
            raise ValueError("aggregator_metrics_ports needs one port per aggregator shard")
        if self.topic_replication > len(self.kafka_broker_ports):
            raise ValueError("topic_replication exceeds the number of Kafka brokers")
        if self.min_insync_replicas > self.topic_replication:
            raise ValueError("min_insync_replicas exceeds topic_replication")
        if (self.lb_tls_cert is None) != (self.lb_tls_key is None):
            raise ValueError("lb_tls_cert and lb_tls_key go together: both or neither")
        if len(set(self.hosts)) != len(self.hosts):
            raise ValueError(f"hosts names an engine twice: {list(self.hosts)}")
        if self.hosts:
            plan(self.hosts_tier, self.hosted, self.hosts_subnet)  # refuses what cannot be
        return self

    # --- where state lives --------------------------------------------------------------------

    @property
    def var(self) -> Path:
        return self.var_dir or self.root / "var" / "cluster"

    def home(self, node: str) -> Path:
        return self.var / node

    def log(self, node: str) -> Path:
        return self.home(node) / f"{node}.log"

    # --- node names ---------------------------------------------------------------------------

    @property
    def kafka_nodes(self) -> tuple[str, ...]:
        return tuple(f"kafka-{i}" for i in range(1, len(self.kafka_broker_ports) + 1))

    @property
    def cassandra_nodes(self) -> tuple[str, ...]:
        return tuple(f"cassandra-{i}" for i in range(1, len(self.cassandra_hosts) + 1))

    @property
    def spark_workers(self) -> tuple[str, ...]:
        return tuple(f"spark-worker-{i}" for i in range(1, len(self.spark_worker_ui_ports) + 1))

    @property
    def engine_nodes(self) -> tuple[str, ...]:
        """Every engine node, in start order."""
        return (*self.kafka_nodes, *self.cassandra_nodes, "spark-master", *self.spark_workers)

    # --- hosts --------------------------------------------------------------------------------

    @property
    def hosted(self) -> tuple[str, ...]:
        """The nodes on hosts of their own, in the tier's order: the brokers, then the Cassandra
        nodes, of the engines in ``hosts``."""
        kafka = self.kafka_nodes if "kafka" in self.hosts else ()
        return (*kafka, *(self.cassandra_nodes if "cassandra" in self.hosts else ()))

    def _plan(self) -> list[Host]:
        return plan(self.hosts_tier, self.hosted, self.hosts_subnet)

    def tier(self) -> Hosts | None:
        """The tier of hosts the hosted nodes run on (reached from the root), or None."""
        if not self.hosted:
            return None
        return Hosts(self.hosts_tier, self.hosted, from_root=True, subnet=self.hosts_subnet)

    def address(self, node: str) -> str:
        """The address ``node`` listens on: its host's; on loopback a Cassandra node's own
        (``cassandra_hosts``), any other node's ``host``."""
        if node in self.hosted:
            return next(h.address for h in self._plan() if h.name == node)
        if node in self.cassandra_nodes:
            return self.cassandra_hosts[self.cassandra_nodes.index(node)]
        return self.host

    def cassandra_jmx(self, node: str) -> tuple[str, int]:
        """Where ``node``'s JMX listens: local only, on the loopback of its own host (of this
        machine, on loopback, with a port per node)."""
        if node in self.hosted:
            return "127.0.0.1", self.cassandra_jmx_port
        return "127.0.0.1", self.cassandra_jmx_ports[self.cassandra_nodes.index(node)]

    def netns(self, node: str) -> str | None:
        """The network namespace ``node`` runs in; None: the machine's own."""
        if node in self.hosted:
            return next(h.netns for h in self._plan() if h.name == node)
        return None

    # --- derived values -----------------------------------------------------------------------

    @property
    def kafka_listeners(self) -> tuple[tuple[str, int, int], ...]:
        """(address, broker port, controller port) of each Kafka node."""
        if "kafka" in self.hosts:
            return tuple(
                (self.address(n), self.kafka_port, self.kafka_controller_port)
                for n in self.kafka_nodes
            )
        return tuple(
            (self.host, b, c)
            for b, c in zip(self.kafka_broker_ports, self.kafka_controller_ports, strict=True)
        )

    @property
    def kafka_bootstrap(self) -> str:
        return ",".join(f"{a}:{p}" for a, p, _ in self.kafka_listeners)

    @property
    def kafka_quorum_voters(self) -> str:
        return ",".join(f"{i}@{a}:{c}" for i, (a, _, c) in enumerate(self.kafka_listeners, start=1))

    @property
    def cassandra_addresses(self) -> tuple[str, ...]:
        return tuple(self.address(n) for n in self.cassandra_nodes)

    @property
    def storage_hosts(self) -> str:
        return ",".join(self.cassandra_addresses)

    @property
    def cassandra_seeds(self) -> str:
        return self.cassandra_addresses[0]

    @property
    def storage_replication(self) -> str:
        return (
            f"{{'class': 'NetworkTopologyStrategy', "
            f"'{self.cassandra_dc}': {len(self.cassandra_hosts)}}}"
        )

    @property
    def spark_master_url(self) -> str:
        return f"spark://{self.host}:{self.spark_master_port}"

    @property
    def spark_master_ui_url(self) -> str:
        return f"http://{self.host}:{self.spark_master_ui_port}"

    @property
    def ingest_urls(self) -> tuple[str, ...]:
        return tuple(f"http://{self.host}:{p}" for p in self.ingest_ports)

    @property
    def lb_url(self) -> str:
        scheme = "https" if self.lb_tls_cert is not None else "http"
        return f"{scheme}://{self.host}:{self.lb_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://{self.host}:{self.dashboard_port}"

    @property
    def aggregator_shard_specs(self) -> tuple[str, ...]:
        """``--shard`` of each aggregator: ``0/2``, ``1/2``."""
        n = self.aggregator_shards
        return tuple(f"{i}/{n}" for i in range(n))

    def env(self) -> dict[str, str]:
        """The ``APM_*`` variables every platform process on this cluster runs with."""
        return {
            "APM_KAFKA_BOOTSTRAP": self.kafka_bootstrap,
            "APM_INGEST_TOPIC_REPLICATION": str(self.topic_replication),
            "APM_STORAGE_HOSTS": self.storage_hosts,
            "APM_STORAGE_PORT": str(self.cassandra_port),
            "APM_STORAGE_REPLICATION": self.storage_replication,
            "APM_AGGREGATOR_DRIVER_MEMORY": self.aggregator_driver_memory,
        }
