"""Fixtures shared by every tier. The real engines start once per session through the
project's own stack scripts, or an already running stack is reused (and then left running)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

# Property tests check what holds, never how fast: on a shared, loaded machine hypothesis'
# 200 ms deadline per example and its too-slow health check fail tests whose properties hold
# (a merge test of the rollup histogram did, at load average 30). Timing is the benchmarks'.
settings.register_profile("apm", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("apm")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from launch.stack.config import StackSettings
    from tests.support.tls_stack import TlsStack


@pytest.fixture(scope="session")
def stack() -> Iterator[StackSettings]:
    """Kafka and Cassandra, healthy. Stops them at the end only if this session started them."""
    from launch.stack import control
    from launch.stack.config import StackSettings

    settings = StackSettings()
    already_up = all(row.healthy for row in control.status(settings))
    if not already_up:
        control.up(settings)
    yield settings
    if not already_up and not os.environ.get("APM_TEST_KEEP_STACK"):
        control.down(settings)


@pytest.fixture(scope="session")
def kafka_bootstrap(stack: StackSettings) -> str:
    return stack.kafka_bootstrap


@pytest.fixture
def own_topics(kafka_bootstrap: str) -> Iterator[list[str]]:
    """The topics this test creates (named from unique metric names): whatever is listed here
    is deleted after it, if it exists."""
    topics: list[str] = []
    yield topics
    if topics:
        from apm.kafka import delete_topics

        delete_topics(kafka_bootstrap, topics)


@pytest.fixture(scope="session")
def cassandra_session(stack: StackSettings):
    from cassandra.cluster import Cluster

    cluster = Cluster([stack.host], port=stack.cassandra_port)
    session = cluster.connect()
    yield session
    cluster.shutdown()


@pytest.fixture(scope="session")
def tls_stack(stack: StackSettings, tmp_path_factory) -> Iterator[TlsStack]:
    """A second Kafka and Cassandra with client TLS, started by ``apm stack``'s code on their
    own ports (tests.support.tls_stack); once per session, stopped at its end."""
    from tests.support.tls_stack import tls_stack as start

    with start(stack, tmp_path_factory.mktemp("tls-stack")) as engines:
        yield engines


@pytest.fixture(scope="session")
def spark(stack: StackSettings) -> Iterator[SparkSession]:
    """One local SparkSession for the whole run (it takes seconds to start)."""
    from aggregator.session import build_session
    from launch.stack.jars import spark_jars

    session = build_session("apm-tests", jars=spark_jars(), driver_memory="1g")
    yield session
    session.stop()


@pytest.fixture
def unique_name() -> Callable[[str], str]:
    """Factory for names that never collide across tests or reruns against a kept stack."""

    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    return make
