import pytest

from bench.stage import Stage, wire_bytes_per_sample
from loadgen.capacity import KAFKA_RF, Measured, plan, topic_partitions_note

pytestmark = pytest.mark.unit


def _measured(**overrides):
    base = {
        "ingest_samples_per_core_s": 100_000.0,
        "aggregator_samples_per_core_s": 200_000.0,
        "bytes_per_sample": 40.0,
        "broker_cpu_per_mb": 0.05,
    }
    return Measured(**{**base, **overrides})


def test_plan_for_the_case_study_load():
    p = plan(_measured(), 10_000, 2_000)
    assert p.samples_per_s == 20_000_000
    assert p.ingest_cores == 300  # 20M x 1.5 / 100k
    assert p.aggregator_cores == 150  # 20M x 1.5 / 200k
    # 20M x 40 B = 800 MB/s, x RF 3 x 1.5 / 100 MB/s = 36 brokers by throughput
    assert p.brokers == 36
    # 10,000 x 40 B = 400 KB/s per topic -> 1 partition; 2,000 topics >= 4 x 150 cores.
    assert p.partitions_per_topic == 1
    assert p.cassandra_nodes >= 3 and p.topics == 2_000
    text = "\n".join(p.reasoning)
    assert "20,000,000 samples/s" in text and "36 brokers" in text


def test_small_loads_keep_the_replication_floors():
    p = plan(_measured(), 10, 2)
    assert p.brokers == KAFKA_RF and p.cassandra_nodes == 3
    # 200k x 1.5 / 20k = 15 aggregator cores; 20 topics x 1 < 4 x 15: ceil(60 / 20) = 3.
    slow = plan(_measured(aggregator_samples_per_core_s=20_000.0), 10_000, 20)
    assert slow.aggregator_cores == 15 and slow.partitions_per_topic == 3
    assert "raised to ceil(60 / 20) = 3 per topic" in "\n".join(slow.reasoning)
    assert p.ingest_cores == 1 and p.aggregator_cores == 1


def test_partitions_per_topic_follow_the_volume_of_one_topic():
    # One sample per server per second per topic: 10,000 x 34 B = 340 KB/s, under 1 MB/s.
    p = plan(_measured(bytes_per_sample=34.0), 10_000, 20)
    assert p.aggregator_cores == 2 and p.partitions_per_topic == 1  # 20 x 1 >= 4 x 2: holds
    line = next(x for x in p.reasoning if x.startswith("Partitions:"))
    assert "10,000 servers x 34.0 B/sample = 340.0 KB/s per topic" in line
    assert "/ 1,000 KB/s per partition" in line and "= 1 per topic by volume" in line
    assert "20 topics x 1 = 20 partitions >= 2 aggregator cores and >= 4 x 2 = 8: holds" in line
    # 100,000 x 34 B = 3.4 MB/s -> 4 partitions, and 20 x 4 = 80 >= 4 x 15 aggregator cores.
    big = plan(_measured(bytes_per_sample=34.0), 100_000, 20)
    assert big.aggregator_cores == 15 and big.partitions_per_topic == 4
    assert "3,400.0 KB/s per topic" in "\n".join(big.reasoning)
    # More metrics add topics, not bytes per topic.
    assert plan(_measured(bytes_per_sample=34.0), 100_000, 2_000).partitions_per_topic == 4


def test_the_partitions_note_writes_out_the_default():
    note = topic_partitions_note()
    assert "`apm.model.TOPIC_PARTITIONS` = 1 partition" in note
    assert "10,000 servers" in note and "= 340 KB/s" in note and "ceil(0.34) = 1" in note
    assert "never remove" in note


def test_slower_stages_need_proportionally_more_cores():
    fast, slow = (
        plan(_measured(), 10_000, 20),
        plan(_measured(ingest_samples_per_core_s=25_000.0), 10_000, 20),
    )
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
