"""The agent's version as a metric value and back (apm.agentversion)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.agentversion import version_number, version_text

pytestmark = pytest.mark.unit

part = st.integers(0, 999)


@given(major=part, minor=part, patch=part)
def test_text_number_text_round_trips(major: int, minor: int, patch: int) -> None:
    text = f"{major}.{minor}.{patch}"
    assert version_text(version_number(text)) == text
    assert version_text(version_number(f"1:{text}-1~bpo12")) == text  # epoch, revision


@pytest.mark.parametrize("value", [-1.0, 1.5, 1e9, math.nan, math.inf])
def test_a_value_no_agent_sends_is_unknown(value: float) -> None:
    assert version_text(value).startswith("unknown (")
