"""`apm aggregator status` names the metrics no live job covers (a shard that is down)."""

from __future__ import annotations

import pytest

from aggregator.status import not_covered, render_not_covered
from apm.query_state import shard_of

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


def _in_shard(shard: int, prefix: str) -> str:
    return next(m for i in range(1000) if shard_of(m := f"{prefix}.{i}", 2) == shard)


def _job(shard: int, age_s: float = 1.0) -> dict[str, object]:
    return {"scope": {"metrics": [], "shard": [shard, 2]}, "updated_at": NOW - age_s}


def test_the_metrics_of_a_stopped_shard_are_not_covered(fake_store) -> None:
    in0, in1 = _in_shard(0, "a"), _in_shard(1, "b")
    fake_store.add(f"FROM * SELECT {in0} WINDOW 10s COMPUTE max")
    fake_store.add(f"FROM * SELECT {in1} WINDOW 10s COMPUTE max")
    fake_store.put_status("aggregator-shard-0-of-2", _job(0))
    fake_store.put_status("aggregator-shard-1-of-2", _job(1))
    assert not_covered(fake_store, NOW) == []
    # Shard 1 stopped: its row goes stale, and its metric is no longer covered.
    fake_store.put_status("aggregator-shard-1-of-2", _job(1, age_s=31))
    assert not_covered(fake_store, NOW) == [in1]
    assert render_not_covered([in1]).startswith(f"not covered: {in1} (")
    fake_store.status.clear()
    assert not_covered(fake_store, NOW) == sorted([in0, in1])
    assert render_not_covered([]) == ""


def test_the_health_page_names_the_metrics_no_live_job_covers() -> None:
    from dashboard.health import build_health
    from dashboard.pages.health import render as page

    in0, in1 = _in_shard(0, "c"), _in_shard(1, "d")
    status = {
        "aggregator-shard-0-of-2": _job(0),
        "aggregator-shard-1-of-2": _job(1, age_s=31),  # stopped: its row went stale
    }
    view = build_health(status, {}, [], NOW, 60, [in0, in1, in1])
    assert view.not_covered == [in1]
    html = str(page(view))
    assert "h-not-covered" in html and in1 in html and in0 not in html.split("h-not-covered")[1]
    both = build_health({**status, "aggregator-shard-1-of-2": _job(1)}, {}, [], NOW, 60, [in1])
    assert both.not_covered == [] and "h-not-covered" not in str(page(both))
