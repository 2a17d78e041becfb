"""Each transition of the state machine against a scripted series of 10 s windows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from alerting.machine import AlertState, Observation, fold, step
from alerting.rules import Rule, rule_from_dict

pytestmark = pytest.mark.unit

W = 10


@pytest.fixture
def make_rule() -> Callable[..., Rule]:
    def make(**over: Any) -> Rule:
        raw: dict[str, Any] = {
            "name": "cpu high",
            "query_id": "q1",
            "function": "avg",
            "comparison": ">",
            "thresholds": {"warning": 80, "critical": 90},
            "for_s": 30,
            **over,
        }
        return rule_from_dict(raw, rule_id="r1")

    return make


def series(values: Sequence[float | None], start: float = 1000.0) -> list[Observation]:
    return [Observation(start + i * W, W, v) for i, v in enumerate(values)]


def states(rule: Rule, values: Sequence[float | None]) -> list[str]:
    return [s.state for s in fold(rule, AlertState(), series(values))]


def test_normal_pending_firing_normal(make_rule):
    rule = make_rule()
    got = fold(rule, AlertState(), series([50, 85, 85, 85, 50]))
    assert [s.state for s in got] == ["normal", "pending", "pending", "firing", "normal"]
    firing = got[3]
    # The breach began at the first window's start; it fired when it had lasted for_s.
    assert (firing.since, firing.fired_at, firing.severity) == (1010.0, 1030.0, "warning")
    assert firing.value == 85 and firing.window_start == 1030.0
    assert "avg 85 > warning 80" in firing.reason


def test_pending_that_falls_back_never_fires(make_rule):
    assert states(make_rule(), [85, 85, 50, 85]) == ["pending", "pending", "normal", "pending"]


def test_for_zero_fires_on_the_first_window_and_severity_escalates(make_rule):
    got = fold(make_rule(for_s=0), AlertState(), series([85, 95, 85]))
    assert [(s.state, s.severity) for s in got] == [
        ("firing", "warning"),
        ("firing", "critical"),
        ("firing", "warning"),
    ]
    assert {s.fired_at for s in got} == {1000.0}  # one alert, not three


def test_recovery_threshold_holds_a_flapping_value(make_rule):
    rule = make_rule(for_s=0, thresholds={"warning": 80, "warning_recovery": 70})
    # 81/79 around the threshold: without the recovery line this would fire and clear 3 times.
    flapping = [81, 79, 81, 79, 81, 69, 79]
    assert states(rule, flapping) == ["firing"] * 5 + ["normal", "normal"]
    assert states(make_rule(for_s=0, thresholds={"warning": 80}), flapping[:4]) == [
        "firing",
        "normal",
        "firing",
        "normal",
    ]


def test_keep_firing_for_goes_recovering_then_normal(make_rule):
    rule = make_rule(for_s=0, keep_firing_for_s=20)
    got = fold(rule, AlertState(), series([85, 50, 85, 50, 50]))
    assert [s.state for s in got] == ["firing", "recovering", "firing", "recovering", "normal"]
    assert {s.fired_at for s in got[:4]} == {1000.0}  # re-breach while recovering: same alert
    assert "keep_firing_for" in got[1].reason


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("alert", ["firing", "firing", "firing", "nodata", "nodata", "firing"]),
        ("keep", ["firing", "firing", "firing", "firing", "firing", "firing"]),
        ("ok", ["firing", "firing", "firing", "normal", "normal", "firing"]),
    ],
)
def test_nodata_policies(make_rule, policy, expected):
    rule = make_rule(for_s=0, nodata_windows=3, nodata_policy=policy)
    got = fold(rule, AlertState(), series([85, None, None, None, None, 85]))
    assert [s.state for s in got] == expected
    if policy == "alert":
        assert got[3].reason.startswith("no samples for 3 windows")
        assert got[3].since == got[4].since == 1030.0


def test_error_window_and_back(make_rule):
    rule = make_rule(for_s=0)
    prior = step(rule, AlertState(), Observation(0, W, 85))
    err = step(rule, prior, Observation(10, W, None, error="query q1 was deleted"))
    assert (err.state, err.reason) == ("error", "query q1 was deleted")
    assert step(rule, err, Observation(20, W, 50)).state == "normal"


def test_late_data_refolded_from_the_state_before_the_window(make_rule):
    rule = make_rule(for_s=20)
    windows = series([85, 85, 50])
    before = fold(rule, AlertState(), windows[:1])[-1]
    fired = fold(rule, before, windows[1:2])[-1]
    assert fired.state == "firing"
    # Late samples refine window 1 back under the threshold: refolding windows 1.. from the
    # state before window 1 gives no firing at all, as if the late data had been on time.
    refined = [Observation(1010.0, W, 70.0), windows[2]]
    assert [s.state for s in fold(rule, before, refined)] == ["normal", "normal"]


def test_replay_is_deterministic(make_rule):
    rule = make_rule(for_s=20, keep_firing_for_s=10, nodata_policy="alert", nodata_windows=2)
    values = [85, 95, None, None, 91, 50, 50, 85, 85, 85]
    assert fold(rule, AlertState(), series(values)) == fold(rule, AlertState(), series(values))


def test_less_than_comparison(make_rule):
    rule = make_rule(comparison="<", thresholds={"warning": 20, "critical": 10}, for_s=0)
    got = fold(rule, AlertState(), series([50, 15, 5]))
    assert [(s.state, s.severity) for s in got] == [
        ("normal", None),
        ("firing", "warning"),
        ("firing", "critical"),
    ]
