"""apm.model.metric_sql on Spark: the aggregator reads each record's metric off its topic with
it, so it must invert apm.model.topic_for exactly (issue 14, item 3)."""

from __future__ import annotations

import random

import pytest

from apm.model import metric_sql, topic_for

pytestmark = pytest.mark.integration

_REST = "ab09Z._-"


def test_the_spark_sql_decoding_agrees_with_topic_for(spark):
    """The aggregator reads the metric off the topic with metric_sql (no UDF)."""
    rng = random.Random(14)
    sample = ["cpu.util", "cpu_util", "a-b_c", "a" + "_" * 199, "a" + "._" * 99 + "x", "x" * 200]
    sample += ["m" + "".join(rng.choice(_REST + "_") for _ in range(rng.randint(0, 199)))]
    sample += [
        "n" + "".join(rng.choice("._") for _ in range(rng.randint(0, 199))) for _ in range(50)
    ]
    frame = spark.createDataFrame([(topic_for(n), n) for n in sample], "topic string, want string")
    rows = frame.selectExpr(f"{metric_sql('topic')} AS got", "want").collect()
    assert [(r.got, r.want) for r in rows if r.got != r.want] == []
