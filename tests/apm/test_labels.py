"""apm.labels: the naming rule DogStatsD tags, remote_write labels and OTLP attributes share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.labels import LABELS_KEEP, LabelPolicy, labelled_name, server_from_label
from apm.model import metric_name_error

pytestmark = pytest.mark.unit


def test_chosen_labels_become_sorted_name_parts():
    named = labelled_name(
        "http.server.duration", [("status", "200"), ("method", "GET")], LabelPolicy()
    )
    assert named == ("http.server.duration.method_GET.status_200", None, 0)


def test_unbounded_values_are_dropped_and_counted_and_keep_wins():
    labels = [("user_id", "42"), ("trace", "x"), ("path", "8c1f0a7e-9d2b-4c3e-8f00-1234567890ab")]
    assert labelled_name("m", labels, LabelPolicy()) == ("m", None, 3)
    assert labelled_name("m", [("le", "0.5")], LabelPolicy()).name == "m"  # a number: dropped
    assert labelled_name("m", [("le", "0.5")], LabelPolicy(keep=LABELS_KEEP)).name == "m.le_0_5"


def test_include_and_exclude():
    policy = LabelPolicy.of(["method"], exclude=["job"])
    assert labelled_name("m", [("method", "GET"), ("path", "/a")], policy).name == "m.method_GET"
    policy = LabelPolicy.of(["*"], exclude=["job"])
    assert labelled_name("m", [("job", "x"), ("path", "a")], policy).name == "m.path_a"


def test_empty_values_are_absent_and_a_bad_base_is_an_error():
    assert labelled_name("m", [("a", "")], LabelPolicy()).name == "m"
    named = labelled_name("_m", [], LabelPolicy())
    assert named.name is None and "must start with a letter" in str(named.error)
    assert labelled_name("m" * 199, [("a", "b")], LabelPolicy()).name is None  # too long


def test_server_from_label():
    assert server_from_label("10.0.0.7:9100") == "10.0.0.7_9100"
    assert server_from_label("[::1]:80") == "1_80"
    assert server_from_label("") is None
    assert server_from_label("x" * 201) is None


@given(
    base=st.text(max_size=60),
    labels=st.lists(st.tuples(st.text(max_size=20), st.text(max_size=300)), max_size=30),
)
def test_any_input_gives_a_valid_name_or_a_reason(base, labels):
    named = labelled_name(base, labels, LabelPolicy())
    assert (named.name is None) != (named.error is None)
    if named.name is not None:
        assert metric_name_error(named.name) is None
    assert 0 <= named.dropped <= len(labels)
