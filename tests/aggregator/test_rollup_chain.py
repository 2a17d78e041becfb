"""The rollup tiers on the real chain: Kafka -> the in-process job (Spark, the executors'
histograms) -> the real Cassandra -> its rollup pass. The 1 min rows equal numpy over the
samples (count, sum, min and max exact, percentiles within the documented bound), and a late
sample refines its minute's row."""

from __future__ import annotations

import time

import numpy as np
import pytest

from aggregator.job import Aggregator
from aggregator.settings import AggregatorSettings
from tests.aggregator.test_rollup import LEVELS, TEXT, assert_tier_row
from tests.support.keyspaces import scratch_repository

pytestmark = pytest.mark.integration


def test_one_minute_rows_equal_numpy_late_data_included(
    spark, kafka_bootstrap, metric_topics, produce, fleet_rows, tmp_path
):
    metric = metric_topics()
    base = float(int(time.time() // 3600) * 3600 - 3600)  # a closed hour, recent
    rows = fleet_rows(10, 150, start=base)
    with scratch_repository("rollupchain") as repo:
        qid = repo.save_query(TEXT.replace("cpu", metric)).id
        produce(metric, rows)
        job = Aggregator(
            spark,
            repo,
            AggregatorSettings(
                kafka_bootstrap=kafka_bootstrap,
                metrics=metric,
                checkpoint_dir=tmp_path / "ckpt",
                trigger_seconds=0.5,
                track_servers=False,
                metrics_port=0,
            ),
            tiers=repo,
        )
        job.start()
        try:
            assert job.windows is not None
            job.windows.processAllAvailable()
            job.roll_up()
            # Late samples for the first minute, within the allowed lateness.
            late = [("db-1", base + 5.5, 1e4), ("db-2", base + 59.5, -3.0)]
            produce(metric, late)
            job.windows.processAllAvailable()
            job.roll_up()
        finally:
            job.stop()
        assert job.rollup is not None and job.rollup.pending == 0
        assert job.telemetry.rollup_lag._value.get() == 0.0

        samples = rows + late
        got = list(repo.read_results(qid, base, base + 3600, tier="1m"))
        assert [r.window_start for r in got] == [base, base + 60, base + 120]
        for r in got:
            inside = np.array(
                [v for _, ts, v in samples if r.window_start <= ts < r.window_start + 60]
            )
            assert_tier_row(r, inside)
        assert got[0].values["max"] == 1e4  # the late sample refined its minute
        (hour,) = repo.read_results(qid, base, base + 3600, tier="1h")
        assert_tier_row(hour, np.array([v for _, _, v in samples]))
        assert set(LEVELS) <= set(hour.values)
