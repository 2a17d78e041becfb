"""The driver's tag map (aggregator/tag_map.py): its bounds, and the per-window rule (a version
applies from the first window start at or after it was received, so one window never mixes two
versions). The same cases run in Java (``TagsTest``), and test_tag_selection.py decodes this
map's bytes in the JVM and asks it the same windows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aggregator.tag_map import TagMap, effective_from

pytestmark = pytest.mark.unit


def test_a_version_applies_from_the_first_window_start_at_or_after_its_receipt():
    assert effective_from(20_000, 10) == 20
    assert effective_from(20_001, 10) == 30
    assert effective_from(20_001, 60) == 60
    assert effective_from(0, 10) == 0


def test_each_window_uses_the_newest_version_in_force_at_its_start():
    m = TagMap()
    m.put("s", {"dc": "a"}, 12_000)
    m.put("s", {"dc": "b"}, 25_000)
    m.put("s", {"dc": "c"}, 25_500)
    assert m.at("s", 10, 10) == {}  # before the first version: untagged
    assert m.at("s", 20, 10) == {"dc": "a"}
    assert m.at("s", 30, 10) == {"dc": "c"}  # b and c both from 30: the newest
    assert m.at("s", 0, 60) == {} and m.at("s", 60, 60) == {"dc": "c"}
    assert m.at("nobody", 30, 10) == {}


@given(
    changes=st.lists(st.integers(0, 200_000), min_size=1, max_size=6),
    width=st.sampled_from([1, 5, 10, 60]),
    samples=st.lists(st.integers(0, 300_000), min_size=2, max_size=40),
)
def test_no_window_mixes_two_versions_whatever_the_batches(changes, width, samples):
    """Samples of a window processed before and after a change was received (each sample at
    or after its own time, as samples arrive) are grouped by one version."""
    received = sorted(changes)
    by_window: dict[int, set[str]] = {}
    for t in sorted(samples):  # processed in time order, each when the map held what came before
        m = TagMap(max_versions=len(received))  # within the bound (past it the oldest go)
        for i, r in enumerate(received):
            if r <= t:
                m.put("s", {"v": str(i)}, r)
        start = t // 1000 // width * width
        by_window.setdefault(start, set()).add(m.at("s", start, width).get("v", ""))
    assert all(len(v) == 1 for v in by_window.values()), by_window
    # and a change applies from the next window at the latest
    m = TagMap(max_versions=len(received))
    for i, r in enumerate(received):
        m.put("s", {"v": str(i)}, r)
    last = received[-1]
    next_start = (last // 1000 // width + 1) * width
    assert m.at("s", next_start, width) == {"v": str(len(received) - 1)}


def test_an_unchanged_record_is_no_new_version_and_a_tombstone_is_one():
    m = TagMap()
    m.put("s", {"dc": "a"}, 1_000)
    v = m.version
    m.put("s", {"dc": "a"}, 2_000)
    assert m.version == v and len(m.versions("s")) == 1
    m.put("s", None, 3_000)
    assert m.version == v + 1 and m.at("s", 10, 10) == {}


def test_servers_past_the_bound_stay_untagged_and_are_counted():
    m = TagMap(max_servers=2)
    for s in ("a", "b", "c", "d"):
        m.put(s, {"dc": s}, 0)
    assert len(m) == 2 and m.dropped == 2
    assert m.at("c", 0, 10) == {}
    m.put("a", {"dc": "x"}, 5)  # a known server still changes
    assert len(m.versions("a")) == 2


def test_versions_are_bounded_and_pruned_once_their_windows_closed():
    m = TagMap(max_versions=3)
    for i in range(5):
        m.put("s", {"v": str(i)}, 1_000 * i)
    assert [v.tags["v"] for v in m.versions("s")] == ["2", "3", "4"]
    m.prune(now_ms=3_500 + 101_000, horizon_s=101)  # only 3 was received before the cut
    assert [v.tags["v"] for v in m.versions("s")] == ["3", "4"]
    m.prune(now_ms=4_000 + 200_000, horizon_s=101)
    assert [v.tags["v"] for v in m.versions("s")] == ["4"]
    with pytest.raises(ValueError):
        TagMap(max_servers=0)


def test_the_oldest_version_found_at_the_start_covers_the_windows_before_it():
    m = TagMap()
    m.put("s", {"dc": "a"}, 50_000)
    m.put("s", {"dc": "b"}, 70_000)
    m.known_since_start()
    assert m.at("s", 0, 10) == {"dc": "a"} and m.at("s", 70, 10) == {"dc": "b"}


def test_the_encoding_is_a_line_a_version():
    m = TagMap()
    m.put("web-1", {"role": "web", "dc": "eu-1"}, 1_500)
    m.put("db-1", {}, 0)
    assert m.encode() == b"web-1\t1500\tdc\x1feu-1\x1frole\x1fweb\ndb-1\t0\t\n"
