"""Factories for the aggregator's tests: stored queries, an in-memory store standing in for the
storage Repository (unit tests only), Kafka metric topics, and the numpy reference."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from apm.functions import truth
from apm.query import Query, StoredQuery, WindowResult, parse
from apm.ranking import Ranked
from tests.support.keyspaces import scratch_keyspace
from tests.support.servers import FakeServerSeries

BASE = 1_699_999_200  # epoch seconds, a multiple of 3600

Row = tuple[str, float, float]  # server, ts, value


@dataclass
class FakeStore(FakeServerSeries):
    """The AggregatorStore protocol in memory: the last upsert of each window wins. Rows with
    a server and rankings behave as the repository's (tests.support.servers)."""

    queries: dict[str, StoredQuery] = field(default_factory=dict)
    results: dict[tuple[str, float], WindowResult] = field(default_factory=dict)
    servers: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    status: dict[str, dict] = field(default_factory=dict)
    upserts: int = 0

    def add(self, text: str) -> StoredQuery:
        stored = StoredQuery(uuid.uuid4().hex, parse(text))
        self.queries[stored.id] = stored
        return stored

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        return [q for q in self.queries.values() if include_paused or not q.paused]

    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        rows, n = self.upsert_server_rows(rows)
        for row in rows:
            self.results[(row.query_id, row.window_start)] = row
            n += 1
        self.upserts += n
        return n

    def touch_servers(self, last_seen: Mapping[str, float]) -> None:
        for server, ts in last_seen.items():
            self.servers[server] = max(ts, self.servers.get(server, ts))

    def touch_metrics(self, last_seen: Mapping[str, float]) -> None:
        for metric, ts in last_seen.items():
            self.metrics[metric] = max(ts, self.metrics.get(metric, ts))

    def put_status(self, component: str, payload: Mapping[str, object]) -> None:
        self.status[component] = dict(payload)

    def get_status(self) -> dict[str, dict]:
        return dict(self.status)

    def of(self, query_id: str) -> dict[float, WindowResult]:
        return {ws: r for (qid, ws), r in self.results.items() if qid == query_id}

    def of_servers(self, query_id: str) -> dict[tuple[str, float], WindowResult]:
        """(server, window start) -> result of a BY server query."""
        return {
            (s, ms / 1000): r for (qid, s, ms), r in self.server_rows.items() if qid == query_id
        }

    @property
    def ranked(self) -> dict[tuple[str, float], list[Ranked]]:
        """(query id, window start) -> the window's stored ranking."""
        return {(qid, ms / 1000): ranking for (qid, ms), ranking in self.rankings.items()}


@pytest.fixture
def fake_store() -> FakeStore:
    return FakeStore()


def expected(rows: Iterable[Row], query: Query) -> dict[float, dict[str, float]]:
    """numpy's answer for every window of ``query`` over ``rows`` (duplicates removed)."""
    by_window: dict[float, dict[tuple[str, float], float]] = {}
    for server, ts, value in rows:
        if query.matches(server):
            start = float(np.floor(ts / query.window_seconds) * query.window_seconds)
            by_window.setdefault(start, {}).setdefault((server, ts), value)
    out = {}
    for start, samples in by_window.items():
        v = np.array(list(samples.values()))
        out[start] = {f.key: truth(f, v) for f in query.functions}  # apm.functions' numpy
    return out


def assert_matches(got: Mapping[float, WindowResult], want: Mapping[float, dict[str, float]]):
    assert sorted(got) == sorted(want)
    for start, values in want.items():
        row = got[start]
        assert row.values.keys() == values.keys()
        for key, value in values.items():
            assert row.values[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (start, key)
        assert row.samples == int(values.get("count", row.samples))


@pytest.fixture
def fleet_rows() -> Callable[..., list[Row]]:
    def make(
        n_servers: int, seconds: int, start: float = BASE, seed: int = 1, prefix: str = "web"
    ) -> list[Row]:
        rng = np.random.default_rng(seed)
        return [
            (f"{prefix}-{s}", float(start + t + rng.random() * 0.9), float(rng.normal(50, 15)))
            for t in range(seconds)
            for s in range(n_servers)
        ]

    return make


@pytest.fixture
def metric_topics(kafka_bootstrap: str, unique_name, own_topics: list[str]) -> Callable[..., str]:
    """Creates metric topics (deleted afterwards); returns the metric name."""
    from apm.kafka import TopicSpec, ensure_topics
    from apm.model import topic_for

    def make(prefix: str = "aggt", partitions: int = 2) -> str:
        metric = unique_name(prefix)
        own_topics.append(topic_for(metric))
        ensure_topics(kafka_bootstrap, [topic_for(metric)], TopicSpec(partitions=partitions))
        return metric

    return make


@pytest.fixture
def produce(kafka_bootstrap: str) -> Iterator[Callable[[str, list[Row]], None]]:
    """Sends rows of one metric in apm.wire records (several samples per record)."""
    from apm.kafka import new_producer
    from apm.model import topic_for
    from apm.wire import ENCODING_HEADER, encode_chunks

    producer = new_producer(kafka_bootstrap, acks="all", linger_ms=5)

    def send(metric: str, rows: list[Row], chunk_bytes: int = 4096) -> None:
        for value in encode_chunks(rows, max_bytes=chunk_bytes):
            producer.send(topic_for(metric), value=value, headers=[ENCODING_HEADER])
        producer.flush()

    yield send
    producer.close()


@pytest.fixture
def job_factory(spark, fake_store, tmp_path, kafka_bootstrap) -> Iterator[Callable[..., Any]]:
    """Starts streaming jobs on the session SparkSession over ``fake_store``; stops them."""
    from aggregator.job import Aggregator
    from aggregator.lag import KafkaOffsets
    from aggregator.settings import AggregatorSettings

    jobs: list[Aggregator] = []

    def make(server_writes=None, **overrides) -> Aggregator:
        settings = AggregatorSettings(
            **{
                "kafka_bootstrap": kafka_bootstrap,
                "checkpoint_dir": tmp_path / f"ckpt{len(jobs)}",
                "trigger_seconds": 0.5,
                "servers_trigger_seconds": 0.5,
                "metrics_port": 0,
                **overrides,
            }
        )
        offsets = KafkaOffsets(kafka_bootstrap)
        job = Aggregator(spark, fake_store, settings, offsets=offsets, server_writes=server_writes)
        jobs.append(job)
        job.start()
        return job

    yield make
    for job in jobs:
        job.stop()


@pytest.fixture(scope="session")
def server_keyspace(cassandra_session) -> Iterator[str]:
    """A migrated keyspace for what the executors write (aggregator/server_writes.py): per-server
    results and rankings go to the real Cassandra, never to a fake."""
    with scratch_keyspace(cassandra_session, "agg_servers") as name:
        yield name


@pytest.fixture
def server_repo(cassandra_session, server_keyspace) -> Any:
    from storage.repository import Repository

    return Repository(cassandra_session, server_keyspace)
