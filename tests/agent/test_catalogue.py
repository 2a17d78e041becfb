"""docs/metrics.md against what the agent emits, both ways: every emitted host or agent metric
is in the catalogue with a unit and a type, and every catalogue entry is emitted."""

from __future__ import annotations

import re

import pytest

from agent.collectors import REGISTRY, CollectorContext
from agent.spool import Spool
from agent.stats import AgentStats
from apm.model import metric_name_error
from apm.settings import PROJECT_ROOT

pytestmark = pytest.mark.unit

_PLACEHOLDER = re.compile(r"<[a-z]+>")


def _catalogue() -> dict[str, tuple[str, str]]:
    """Host and agent entries: name pattern -> (unit, type)."""
    text = (PROJECT_ROOT / "docs" / "metrics.md").read_text()
    entries = {}
    for match in re.finditer(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \| ([a-z]+) \|", text, re.M):
        name, unit, kind, collector = (g.strip() for g in match.groups())
        if collector != "statsd":
            entries[name] = (unit, kind)
    return entries


def _pattern(entry: str) -> re.Pattern[str]:
    parts = _PLACEHOLDER.split(entry)
    return re.compile(r"[A-Za-z0-9_\-]+".join(re.escape(p) for p in parts))


@pytest.fixture
def emitted(fake_psutil, clock, tmp_path) -> dict[str, float]:
    context = CollectorContext(
        psutil=fake_psutil, stats=AgentStats(clock), extra={"spool": Spool(tmp_path, fsync=False)}
    )
    collectors = REGISTRY.create(REGISTRY.names(), context)
    for collector in collectors:
        collector.collect(clock())
    for core in fake_psutil.cores:  # a second of CPU time passes on every core
        core.user += 30
        core.idle += 70
    clock.advance(1)
    out: dict[str, float] = {}
    for collector in collectors:
        out.update(collector.collect(clock()))
    return out


def test_catalogue_entries_have_units_and_known_types() -> None:
    entries = _catalogue()
    assert len(entries) > 30
    for name, (unit, kind) in entries.items():
        assert unit, name
        assert kind in {"gauge", "rate", "total"}, (name, kind)


def test_every_emitted_metric_is_in_the_catalogue(emitted) -> None:
    patterns = [_pattern(e) for e in _catalogue()]
    missing = [m for m in emitted if not any(p.fullmatch(m) for p in patterns)]
    assert not missing, f"emitted but not in docs/metrics.md: {missing}"
    assert all(metric_name_error(m) is None for m in emitted)


def test_every_catalogue_entry_is_emitted(emitted) -> None:
    unmatched = [e for e in _catalogue() if not any(_pattern(e).fullmatch(m) for m in emitted)]
    assert not unmatched, f"in docs/metrics.md but never emitted: {unmatched}"


def test_the_real_host_emits_only_catalogued_names(clock) -> None:
    import psutil

    patterns = [_pattern(e) for e in _catalogue()]
    context = CollectorContext(psutil=psutil, stats=AgentStats(clock))
    names: set[str] = set()
    for collector in REGISTRY.create(REGISTRY.names(), context):
        names.update(collector.collect(clock()))
    assert [n for n in names if not any(p.fullmatch(n) for p in patterns)] == []
