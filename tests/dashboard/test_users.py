"""The users' logic over the in-memory store (tests/support/users.py, held to the real table's
contract by tests/storage/test_users.py): names, roles and passwords refused with a reason,
scrypt hashes, verify, disable, and the role cache of open sessions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dashboard.guard import StorageUnavailable
from dashboard.settings import DashboardSettings
from dashboard.signin import check_credentials, session_role, sign_in
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import SCRYPT, UserConflict, UserDirectory, UserError, name_error
from tests.support.users import MemoryUsers

pytestmark = pytest.mark.unit

PW = "correct horse"


def _directory(cache_s: float = 5.0) -> tuple[UserDirectory, MemoryUsers]:
    store = MemoryUsers()
    return UserDirectory(
        store, DashboardTelemetry(), clock=lambda: 1_700_000_000, cache_s=cache_s
    ), store


def test_a_user_signs_in_with_its_role_and_a_scrypt_hash_is_stored() -> None:
    users, store = _directory()
    users.add("alice", "viewer", PW)
    stored = store.users["alice"].password_hash
    assert stored.startswith(SCRYPT + "$") and PW not in stored
    assert users.verify("alice", PW) == "viewer"
    assert users.verify("alice", PW + "x") is None
    assert users.verify("bob", PW) is None
    users.set_role("alice", "editor")
    assert users.verify("alice", PW) == "editor"
    users.set_disabled("alice", True)
    assert users.verify("alice", PW) is None
    users.set_disabled("alice", False)
    assert users.verify("alice", PW) == "editor"


@pytest.mark.parametrize(
    ("name", "role", "password", "match"),
    [
        ("", "viewer", PW, "bad user name"),
        ("-x", "viewer", PW, "bad user name"),
        ("a b", "viewer", PW, "bad user name"),
        ("x" * 65, "viewer", PW, "bad user name"),
        ("bob", "root", PW, "unknown role 'root': one of viewer, editor, admin"),
        ("bob", "viewer", "short", "at least 8"),
        ("bob", "viewer", "x" * 1025, "at most 1024"),
    ],
)
def test_bad_input_is_refused_with_the_reason(
    name: str, role: str, password: str, match: str
) -> None:
    users, store = _directory()
    with pytest.raises(UserError, match=match):
        users.add(name, role, password)
    assert store.users == {}


def test_an_existing_or_missing_user_is_a_conflict() -> None:
    users, store = _directory()
    users.add("alice", "viewer", PW)
    with pytest.raises(UserConflict, match="exists"):
        users.add("alice", "admin", PW)
    assert store.users["alice"].role == "viewer"
    with pytest.raises(UserConflict, match="no user 'bob'"):
        users.set_role("bob", "admin")
    with pytest.raises(UserConflict, match="no user 'bob'"):
        users.set_disabled("bob", True)
    with pytest.raises(UserError, match="unknown role"):
        users.set_role("alice", "superuser")


def test_names_allowed() -> None:
    assert name_error("alice.b-c_d@example.com") is None
    assert name_error("a" * 64) is None and name_error("a" * 65) is not None


def test_a_sessions_role_is_read_again_after_the_cache_and_kept_through_an_outage() -> None:
    users, store = _directory(cache_s=0.0)
    users.add("alice", "editor", PW)
    session = {"user": "alice", "builtin": False}
    assert session_role(session, lambda: users) == "editor"
    store.users["alice"] = replace(store.users["alice"], role="viewer")  # behind its back
    assert session_role(session, lambda: users) == "viewer"  # cache 0: read again
    store.down = True
    assert session_role(session, lambda: users) == "viewer"  # the last role read
    with pytest.raises(StorageUnavailable):
        session_role({"user": "never-read", "builtin": False}, lambda: users)
    store.down = False
    users.set_disabled("alice", True)
    assert session_role(session, lambda: users) is None


def test_a_change_made_here_reaches_the_cache_at_once() -> None:
    users, store = _directory(cache_s=3600)
    users.add("alice", "editor", PW)
    assert users.role("alice") == "editor"
    reads = store.reads
    assert users.role("alice") == "editor" and store.reads == reads  # cached
    users.set_role("alice", "viewer")
    assert users.role("alice") == "viewer"


def test_the_built_in_login_and_token_are_admin_and_win_over_a_stored_user() -> None:
    from werkzeug.security import generate_password_hash

    users, _ = _directory()
    users.add("ops", "viewer", PW)
    token = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"
    settings = DashboardSettings(
        user="ops", password_hash=generate_password_hash("s3cret!!"), token=token
    )
    assert check_credentials(settings, "ops", "s3cret!!")
    assert sign_in(settings, lambda: users, "ops", "s3cret!!") == ("admin", True)
    assert sign_in(settings, lambda: users, "anyone", token) == ("admin", True)
    assert sign_in(settings, lambda: users, "ops", PW) == ("viewer", False)
    assert sign_in(settings, lambda: users, "ops", "nope") is None
    assert sign_in(settings, None, "ops", PW) is None  # no store: built-in logins only
    assert sign_in(settings, lambda: None, "ops", PW) is None
    # A session of before users existed carries no flag: it was a built-in login.
    assert session_role({"user": "ops"}, None) == "admin"
    assert session_role({"user": "ops", "builtin": False}, None) is None


class _Trail:
    def __init__(self) -> None:
        self.rows: list[tuple[object, ...]] = []

    def record(self, kind: str, object_id: str, action: str, before: object, after: object) -> None:
        self.rows.append((kind, object_id, action, before, after))


def test_a_sign_up_by_the_auth_proxy_is_recorded_once() -> None:
    trail = _Trail()
    users = UserDirectory(MemoryUsers(), DashboardTelemetry(), audit=trail)
    assert users.sign_up("carol", "viewer")
    assert not users.sign_up("carol", "editor")  # exists: nothing changed, nothing recorded
    assert trail.rows == [
        ("user", "carol", "create", None, {"role": "viewer", "disabled": False, "by": "auth proxy"})
    ]
