import pytest

from loadgen.bench_stage import Stage, wire_bytes_per_sample
from loadgen.capacity import KAFKA_RF, Measured, plan

pytestmark = pytest.mark.unit


def _measured(**overrides):
    base = {"ingest_samples_per_core_s": 100_000.0, "aggregator_samples_per_core_s": 200_000.0,
            "bytes_per_sample": 40.0, "broker_cpu_per_mb": 0.05}
    return Measured(**{**base, **overrides})


def test_plan_for_the_case_study_load():
    p = plan(_measured(), 10_000, 2_000)
    assert p.samples_per_s == 20_000_000
    assert p.ingest_cores == 300  # 20M x 1.5 / 100k
    assert p.aggregator_cores == 150  # 20M x 1.5 / 200k
    # 20M x 40 B = 800 MB/s, x RF 3 x 1.5 / 100 MB/s = 36 brokers by throughput
    assert p.brokers == 36
    assert p.partitions_per_topic == 2  # 150 cores x 4 over 2,000 topics: the floor of 2
    assert p.cassandra_nodes >= 3 and p.topics == 2_000
    text = "\n".join(p.reasoning)
    assert "20,000,000 samples/s" in text and "36 brokers" in text


def test_small_loads_keep_the_replication_floors():
    p = plan(_measured(), 10, 2)
    assert p.brokers == KAFKA_RF and p.cassandra_nodes == 3
    # 200k x 1.5 / 20k = 15 aggregator cores, x 4 / 20 topics = 3, rounded up to 4.
    slow = plan(_measured(aggregator_samples_per_core_s=20_000.0), 10_000, 20)
    assert slow.aggregator_cores == 15 and slow.partitions_per_topic == 4
    assert p.ingest_cores == 1 and p.aggregator_cores == 1


def test_slower_stages_need_proportionally_more_cores():
    fast, slow = plan(_measured(), 10_000, 20), plan(
        _measured(ingest_samples_per_core_s=25_000.0), 10_000, 20)
    assert slow.ingest_cores == 4 * fast.ingest_cores


def test_wire_size_of_a_sample_is_measured_from_real_records():
    size = wire_bytes_per_sample(5, "p.", servers=50)
    # "web-00001\t1763800000.0\t12.5\n": name, a 12-digit ts, a value, two tabs, a newline.
    assert 25 < size < 60


def test_a_stage_is_sustained_only_without_loss_lateness_or_stale_results():
    summary = {"lost": 0, "late_ticks": 0, "accepted_per_s": 1.0}
    check = {"lost": 0, "fresh_p99": 3.0, "wrong": 0}
    assert Stage(1, 1, summary, {}, check).sustained
    assert not Stage(1, 1, {**summary, "lost": 1}, {}, check).sustained
    assert not Stage(1, 1, summary, {}, {**check, "lost": 5}).sustained
    assert not Stage(1, 1, {**summary, "late_ticks": 2}, {}, check).sustained
    assert not Stage(1, 1, summary, {}, {**check, "fresh_p99": 5.5}).sustained
