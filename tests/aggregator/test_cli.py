"""``apm aggregator run`` takes its jars from whoever starts it (``APM_AGGREGATOR_JARS``); it
never reaches into ``launch``'s jar cache, so without them it refuses, saying what to set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def _run_aggregator(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "apm.cli", "aggregator", "run", "--metrics", "cpu.util"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_run_without_jars_exits_2_naming_the_setting():
    env = {k: v for k, v in os.environ.items() if k not in ("APM_AGGREGATOR_JARS",)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = _run_aggregator(env)
    assert done.returncode == 2, done.stderr
    assert "APM_AGGREGATOR_JARS=$(apm stack jars)" in done.stderr


def test_the_jar_list_is_split_on_commas():
    from aggregator.settings import AggregatorSettings

    settings = AggregatorSettings(jars=" /a/k.jar, /b/op.jar ,")
    assert settings.jar_list == ["/a/k.jar", "/b/op.jar"]
    assert AggregatorSettings(jars="").jar_list == []
