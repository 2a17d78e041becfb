"""launch/stack/services.py: what a failed start says."""

from __future__ import annotations

import pytest

from launch.stack.services import _cause

pytestmark = pytest.mark.unit


def test_a_failed_kafka_format_reports_the_line_that_names_the_error():
    trace = "\n".join(
        f"\tat kafka.tools.StorageTool.frame{i}(StorageTool.scala:{i})" for i in range(60)
    )
    said = _cause(
        'Exception in thread "main" java.lang.IllegalArgumentException: requirement failed: '
        "If you have two listeners on the same port ...\n" + trace,
        "",
    )
    assert said.startswith('Exception in thread "main" java.lang.IllegalArgumentException')
    assert _cause("", "") == "no output"
    assert _cause("formatting /tmp/x\n", "killed\n") == "formatting /tmp/x\nkilled"
