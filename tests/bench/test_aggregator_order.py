"""The parsing side of ``make bench-aggregator-order`` (the JVM side is SeenSamplesBench)."""

from __future__ import annotations

import pytest

from bench.aggregator_order import command, tables

pytestmark = pytest.mark.unit

_OUT = """\
insert ascending n=200000: v3 7.4 ms, v4 30.8 ms
insert descending n=200000: v3 6049.7 ms, v4 90.7 ms
noise from the JVM
roundtrip held=300 batch=300: decode 182 us, add 475 us, encode 367 us, bytes 2893
"""


def test_the_figures_are_read_with_their_same_run_ratio() -> None:
    inserts, trips = tables(_OUT)
    assert inserts[1:] == [
        ["ascending", "200,000", "7.4", "30.8", "0.2x"],
        ["descending", "200,000", "6,049.7", "90.7", "66.7x"],
    ]
    assert trips[1:] == [["300", "300", "182", "475", "367", "2,893"]]


def test_output_without_figures_gives_only_the_headers() -> None:
    inserts, trips = tables("Exception in thread main\n")
    assert len(inserts) == 1
    assert len(trips) == 1


def test_the_printed_command_runs_the_bench_class_with_its_arguments() -> None:
    cmd = command(1000, 3)
    assert cmd[0] == "java"
    assert cmd[-3:] == ["io.apm.aggregator.SeenSamplesBench", "1000", "3"]
    main_classes, test_classes = cmd[2].split(":")
    assert main_classes.endswith("jvm-test/classes")
    assert test_classes.endswith("jvm-test/test-classes")
