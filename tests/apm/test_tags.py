"""apm.tags: the host tag rule agent, ingest and loadgen share, and the server-tags record."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.model import Snapshot
from apm.tags import (
    MAX_TAG_KEY_LEN,
    MAX_TAG_VALUE_LEN,
    MAX_TAGS,
    decode_tags_record,
    encode_tags_record,
    tag_error,
    tag_key_error,
    tags_error,
)

pytestmark = pytest.mark.unit

_KEY = re.compile(r"[a-z][a-z0-9_.]*")


def _valid_by_definition(key: str, value: str) -> bool:
    """The rule as the issue states it, written independently of apm.tags."""
    key_ok = bool(_KEY.fullmatch(key)) and len(key) <= MAX_TAG_KEY_LEN and key != "server"
    value_ok = len(value) <= MAX_TAG_VALUE_LEN and all(c.isprintable() for c in value)
    return key_ok and value_ok


@given(st.text(max_size=80), st.text(max_size=140))
def test_tag_error_agrees_with_the_rule_over_arbitrary_text(key, value):
    assert (tag_error(key, value) is None) == _valid_by_definition(key, value)


@given(st.from_regex(r"[a-z][a-z0-9_.]{0,63}", fullmatch=True), st.text(max_size=128))
def test_valid_keys_pass_with_printable_values(key, value):
    expected = key != "server" and value.isprintable()
    assert (tag_error(key, value) is None) == expected


@given(st.one_of(st.none(), st.integers(), st.floats(), st.lists(st.text()), st.booleans()))
def test_non_string_keys_and_values_are_refused(other):
    assert tag_error(other, "x") is not None
    assert tag_error("role", other) is not None


def test_the_bounds_and_reserved_key():
    assert tag_error("k" * MAX_TAG_KEY_LEN, "v") is None
    assert "64" in (tag_error("k" * (MAX_TAG_KEY_LEN + 1), "v") or "")
    assert tag_error("role", "v" * MAX_TAG_VALUE_LEN) is None
    assert "128" in (tag_error("role", "v" * (MAX_TAG_VALUE_LEN + 1)) or "")
    assert "reserved" in (tag_error("server", "web-1") or "")
    assert "non-printable" in (tag_error("role", "web\n") or "")
    assert tag_error("Role", "web") is not None
    assert tag_error("1role", "web") is not None
    assert tag_error("availability.zone_2", "eu-1a") is None
    assert tag_error("role", "") is None  # an empty value is a value


def test_tags_error_names_the_key_and_bounds_the_count():
    assert tags_error({"role": "web", "dc": "eu-1"}) is None
    assert tags_error({}) is None
    assert tags_error({"role": "web", "Bad": "x"}) == ("Bad", tags_error({"Bad": "x"})[1])  # type: ignore[index]
    many = {f"k{i}": "v" for i in range(MAX_TAGS + 1)}
    assert tags_error(many) == ("", f"{MAX_TAGS + 1} tags, more than {MAX_TAGS}")
    assert tags_error({f"k{i}": "v" for i in range(MAX_TAGS)}) is None
    where, why = tags_error(["role"]) or ("?", "")
    assert where == "" and "object" in why


@given(st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=40))
def test_tags_error_is_none_exactly_when_every_tag_is_valid(tags):
    expected = len(tags) <= MAX_TAGS and all(_valid_by_definition(k, v) for k, v in tags.items())
    assert (tags_error(tags) is None) == expected


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_.]{0,20}", fullmatch=True).filter(lambda k: k != "server"),
        st.text(max_size=20).filter(str.isprintable),
        max_size=MAX_TAGS,
    ),
    st.floats(min_value=0, max_value=2e9),
)
def test_records_round_trip(tags, ts):
    key, value = encode_tags_record("web-1", tags, ts)
    assert key == b"web-1"
    assert decode_tags_record(value) == ("web-1", tags, ts)


def test_decode_refuses_what_is_no_record():
    for bad in (b"[]", b'{"tags": {}}', b'{"server": "a", "tags": {"Bad": "x"}, "ts": 1}'):
        with pytest.raises(ValueError):
            decode_tags_record(bad)


def test_snapshot_json_carries_tags_only_when_there_are_some():
    assert "tags" not in Snapshot("a", 1.0, {"m": 1.0}).to_json()
    assert "tags" not in Snapshot("a", 1.0, {"m": 1.0}, {}).to_json()
    assert Snapshot("a", 1.0, {"m": 1.0}, {"role": "web"}).to_json()["tags"] == {"role": "web"}


def test_the_key_rule_is_one_check_for_tags_and_queries():
    for key in ("role", "availability.zone_2", "k" * MAX_TAG_KEY_LEN):
        assert tag_key_error(key) is None and tag_error(key, "v") is None
    for key in ("Role", "1role", "", "k" * (MAX_TAG_KEY_LEN + 1), "server", 5):
        assert tag_key_error(key) is not None
        assert tag_error(key, "v") == tag_key_error(key)
