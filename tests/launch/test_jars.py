"""The jar cache: the aggregator's JVM operator is built against the Spark it runs in."""

from __future__ import annotations

import re

import pytest

from launch.stack.config import StackSettings
from launch.stack.jars import _jvm_digest, pinned_spark_version

pytestmark = pytest.mark.unit


def test_the_jvm_operator_compiles_against_the_spark_the_stack_pins():
    settings = StackSettings()
    pom = (settings.root / "aggregator" / "jvm" / "pom.xml").read_text()
    match = re.search(r"<spark\.version>([^<]+)</spark\.version>", pom)
    assert match is not None
    assert match.group(1) == pinned_spark_version(settings)


def test_a_source_change_rebuilds_the_jar(tmp_path):
    jvm = tmp_path / "aggregator" / "jvm"
    source = jvm / "src" / "main" / "java" / "A.java"
    source.parent.mkdir(parents=True)
    (jvm / "pom.xml").write_text("<project/>")
    source.write_text("class A {}")
    settings = StackSettings(root=tmp_path)
    before = _jvm_digest(settings)
    assert _jvm_digest(settings) == before
    source.write_text("class A { int x; }")
    edited = _jvm_digest(settings)
    assert edited != before
    (jvm / "src" / "main" / "java" / "B.java").write_text("class B {}")
    assert _jvm_digest(settings) != edited


def test_the_executors_compile_against_the_cassandra_driver_the_stack_copies():
    """aggregator/jvm compiles against java-driver-core as `provided`: the jar Spark runs it
    with is the one deploy/local/pom.xml copies into the Spark jar set."""
    settings = StackSettings()
    pattern = r"<cassandra\.driver\.version>([^<]+)</cassandra\.driver\.version>"
    operator = re.search(pattern, (settings.root / "aggregator" / "jvm" / "pom.xml").read_text())
    stack = re.search(pattern, (settings.deploy / "pom.xml").read_text())
    assert operator is not None and stack is not None
    assert operator.group(1) == stack.group(1)
