"""API tokens' logic over the in-memory stores (tests/support/tokens.py and users.py, held to
the real tables' contract by tests/storage/): made once and stored as a digest, a role at most
the user's (at creation and at use), expired, revoked, wrong and malformed tokens refused, the
last use written at most once a minute, and the Bearer check of the login hook."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.api_tokens import MAX_EXPIRY_S, TokenDirectory, parse_expiry
from dashboard.settings import DashboardSettings
from dashboard.signin import BUILT_IN_TOKEN, BearerRefusal, check_bearer
from dashboard.telemetry import DashboardTelemetry
from dashboard.throttle import LoginThrottle
from dashboard.users import UserConflict, UserDirectory, UserError
from tests.support.tokens import MemoryTokens
from tests.support.users import MemoryUsers

pytestmark = pytest.mark.unit

PW = "correct horse"


@pytest.fixture
def now() -> list[float]:
    return [1_700_000_000.0]


@pytest.fixture
def world(now: list[float]) -> tuple[TokenDirectory, UserDirectory, MemoryTokens]:
    telemetry = DashboardTelemetry()
    users = UserDirectory(MemoryUsers(), telemetry, clock=lambda: now[0], cache_s=0)
    users.add("alice", "editor", PW)
    store = MemoryTokens()
    return TokenDirectory(store, users, telemetry, clock=lambda: now[0], cache_s=0), users, store


def test_a_token_is_printed_once_stored_as_a_digest_and_acts_with_its_role(world: tuple) -> None:
    tokens, _, store = world
    token, row = tokens.create("alice", "viewer", 86_400, "grafana")
    assert token.startswith(f"apm_{row.id}_") and len(token) == 4 + 16 + 1 + 43
    stored = store.tokens[row.id]
    assert token.split("_", 2)[2] not in repr(stored) and len(stored.digest) == 64
    holder = tokens.verify(token)
    assert holder is not None
    assert (holder.user, holder.role, holder.label) == ("alice", "viewer", "grafana")
    default, _ = tokens.create("alice", None, None, "")
    assert tokens.verify(default).role == "editor"  # the user's role by default


def test_a_token_role_is_at_most_its_users(world: tuple) -> None:
    tokens, users, _ = world
    with pytest.raises(UserError, match="at most editor"):
        tokens.create("alice", "admin", None, "")
    with pytest.raises(UserError, match="unknown role"):
        tokens.create("alice", "root", None, "")
    with pytest.raises(UserConflict, match="no enabled user 'bob'"):
        tokens.create("bob", None, None, "")
    with pytest.raises(UserError, match="label"):
        tokens.create("alice", None, None, "x" * 101)
    token, _ = tokens.create("alice", "editor", None, "")
    users.set_role("alice", "viewer")
    assert tokens.verify(token).role == "viewer"  # lowered with its user
    users.set_role("alice", "admin")
    assert tokens.verify(token).role == "editor"  # never raised past its own
    users.set_disabled("alice", True)
    assert tokens.verify(token) is None


def test_expired_revoked_wrong_and_malformed_tokens_are_refused(
    world: tuple, now: list[float]
) -> None:
    tokens, _, _ = world
    token, _ = tokens.create("alice", None, 3600, "")
    assert tokens.verify(token) is not None
    now[0] += 3600
    assert tokens.verify(token) is None
    other, other_row = tokens.create("alice", None, None, "")
    wrong = other[:-1] + ("A" if other[-1] != "A" else "B")
    assert tokens.verify(wrong) is None
    for bad in ("", "apm_", "apm_zz_" + "a" * 43, other + "x", other.upper(), "x" * 5000):
        assert tokens.verify(bad) is None
    tokens.revoke(other_row.id)
    assert tokens.verify(other) is None
    with pytest.raises(UserConflict, match="no token"):
        tokens.revoke("0" * 16)
    with pytest.raises(UserError, match="16 hex digits"):
        tokens.revoke("nope")


def test_a_cached_check_still_honours_the_expiry(now: list[float]) -> None:
    telemetry = DashboardTelemetry()
    users = UserDirectory(MemoryUsers(), telemetry, clock=lambda: now[0])
    users.add("alice", "viewer", PW)
    tokens = TokenDirectory(MemoryTokens(), users, telemetry, clock=lambda: now[0], cache_s=3600)
    token, _ = tokens.create("alice", None, 60, "")
    assert tokens.verify(token) is not None
    now[0] += 61
    assert tokens.verify(token) is None


def test_the_last_use_is_written_at_most_once_a_minute(world: tuple, now: list[float]) -> None:
    tokens, _, store = world
    token, row = tokens.create("alice", None, None, "")
    for _ in range(5):
        assert tokens.verify(token) is not None
    assert store.touches == 1 and store.tokens[row.id].last_used_at == now[0]


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 30 * 86_400.0), ("12h", 43_200.0), ("2w", 1_209_600.0)]
)
def test_expiries(text: str, seconds: float) -> None:
    assert parse_expiry(text) == seconds


@pytest.mark.parametrize("text", ["", "0d", "30", "d", "30y", "-1d", "3651d", "1.5h"])
def test_bad_expiries_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expiry"):
        parse_expiry(text)
    assert parse_expiry("never") is None


def test_the_bearer_check_takes_both_tokens_and_throttles_wrong_ones(world: tuple) -> None:
    tokens, _, _ = world
    builtin = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"
    settings = DashboardSettings(token=builtin)
    clock = [0.0]
    throttle = LoginThrottle(2, 6, 100, 10, clock=lambda: clock[0])
    telemetry = DashboardTelemetry()
    token, _ = tokens.create("alice", "viewer", None, "")

    def check(t: str) -> object:
        return check_bearer(settings, throttle, telemetry, t, "10.0.0.1", lambda: tokens)

    assert check(builtin) == BUILT_IN_TOKEN and BUILT_IN_TOKEN.role == "admin"
    assert check(token).role == "viewer"
    tokens.revoke(token.split("_")[1])
    for _ in range(2):
        refused = check(token)
        assert isinstance(refused, BearerRefusal) and refused.status == 401
    throttled = check(builtin)  # the client's bucket is empty: not even the right one
    assert isinstance(throttled, BearerRefusal) and throttled.status == 429


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_expiry_text_is_seconds_within_bounds_or_refused(text: str) -> None:
    try:
        seconds = parse_expiry(text)
    except ValueError as exc:
        assert "expiry" in str(exc)
        return
    assert seconds is None or 60 <= seconds <= MAX_EXPIRY_S


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=120),
        st.from_regex(r"apm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", fullmatch=True),
    )
)
def test_no_text_but_the_token_itself_acts_for_anyone(text: str) -> None:
    tokens, token = _one_token()
    assert (tokens.verify(text) is not None) == (text == token)
    assert tokens.verify(token) is not None


@cache
def _one_token() -> tuple[TokenDirectory, str]:
    """Made once: a user costs a scrypt hash."""
    telemetry = DashboardTelemetry()
    users = UserDirectory(MemoryUsers(), telemetry)
    users.add("alice", "viewer", PW)
    tokens = TokenDirectory(MemoryTokens(), users, telemetry)
    return tokens, tokens.create("alice", None, None, "")[0]
