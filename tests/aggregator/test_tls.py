"""The aggregator over TLS end to end, on the Kafka and Cassandra that ``apm stack``'s code
started with client TLS (the ``tls_stack`` fixture): Spark's Kafka source reads the records
through the aggregator's own Kafka TLS variables (APM_AGGREGATOR_KAFKA_*), and the executors'
Java writer stores a BY server query's windows in Cassandra over TLS (the storage settings'
files, io.apm.aggregator.store.PemTls)."""

from __future__ import annotations

import uuid

import pytest

from aggregator.job import Aggregator
from aggregator.lag import KafkaOffsets
from aggregator.server_writes import ServerWrites
from aggregator.settings import AggregatorSettings
from apm.kafka import TopicSpec, ensure_topics, new_admin, new_producer
from apm.model import topic_for
from apm.wire import ENCODING_HEADER, encode_chunks
from storage.repository import Repository
from storage.settings import StorageSettings
from tests.aggregator.conftest import BASE, assert_matches, expected

pytestmark = pytest.mark.integration


def test_a_job_reads_kafka_and_its_executors_write_cassandra_over_tls(
    spark, tls_stack, fake_store, fleet_rows, tmp_path, monkeypatch
):
    engines = tls_stack.settings
    bootstrap = tls_stack.kafka_bootstrap
    monkeypatch.setenv("APM_AGGREGATOR_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("APM_AGGREGATOR_KAFKA_TLS_CA", str(tls_stack.ca.cert))
    settings = AggregatorSettings(
        kafka_bootstrap=bootstrap,
        checkpoint_dir=tmp_path / "ckpt",
        trigger_seconds=0.5,
        servers_trigger_seconds=0.5,
        metrics_port=0,
        server_windows_live=True,  # every batch writes the open windows too
    )
    assert settings.kafka_tls.enabled and settings.kafka_tls.ca == tls_stack.ca.cert
    metric = f"tls_{uuid.uuid4().hex[:8]}"
    admin = new_admin(bootstrap, tls=settings.kafka_tls)
    try:
        ensure_topics(admin, [topic_for(metric)], TopicSpec(partitions=2))
    finally:
        admin.close()

    storage = StorageSettings(
        hosts=engines.host,
        port=engines.cassandra_port,
        keyspace=f"tls_agg_{uuid.uuid4().hex[:8]}",
        tls=True,
        tls_ca=tls_stack.ca.cert,
    )
    repo = Repository.connect(storage)  # creates the keyspace, over TLS
    try:
        plain = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, max")
        per = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, max BY server")
        writes = ServerWrites(storage, storage.keyspace, retry_s=10)
        job = Aggregator(
            spark,
            fake_store,
            settings.model_copy(update={"metrics": metric}),
            offsets=KafkaOffsets(bootstrap, settings.kafka_tls),
            server_writes=writes,
        )
        rows = fleet_rows(3, 20)
        producer = new_producer(bootstrap, tls=settings.kafka_tls, acks="all")
        try:
            for value in encode_chunks(rows, max_bytes=2048):
                producer.send(topic_for(metric), value=value, headers=[ENCODING_HEADER])
            producer.flush(30)
        finally:
            producer.close()
        job.start()
        try:
            assert job.windows is not None
            job.windows.processAllAvailable()
        finally:
            job.stop()
        assert_matches(fake_store.of(plain.id), expected(rows, plain.query))
        for server in sorted({s for s, _, _ in rows}):
            got = {
                r.window_start: r
                for r in repo.read_server_results(per.id, server, BASE - 100, BASE + 100)
            }
            assert_matches(got, expected([x for x in rows if x[0] == server], per.query))
    finally:
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {storage.keyspace}")
        repo.close()
