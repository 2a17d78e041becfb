"""Who a password or a session is, and with which role (:mod:`dashboard.roles`): the one
check behind the login page (:mod:`dashboard.auth`) and the Prometheus API's Basic auth
(:mod:`dashboard.promapi.access`).

- The configured login (``APM_DASHBOARD_USER`` with ``APM_DASHBOARD_PASSWORD_HASH``) and the
  token (``APM_DASHBOARD_TOKEN``, as a password with any user name) are ``admin``, as before
  there were users: the *built-in* logins.
- Any other name is a user of ``apm user`` (:mod:`dashboard.users`), with its stored role.

A session remembers whether it is built-in; a user's session gets its role from the store on
each request (cached a few seconds), so a role change or a disable reaches it.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable, MutableMapping
from typing import Any

from werkzeug.security import check_password_hash

from dashboard.api_tokens import TokenDirectory
from dashboard.guard import guarded
from dashboard.roles import ADMIN
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory

__all__ = [
    "Tokens",
    "Users",
    "check_credentials",
    "session_role",
    "sign_in",
    "tokens_for",
    "users_for",
]

# The users' directory, built on first use; None where there is no Cassandra store (the
# unit tests' fakes): then only the built-in logins exist.
Users = Callable[[], UserDirectory | None]
# The API tokens' directory, the same way.
Tokens = Callable[[], TokenDirectory | None]


def check_credentials(settings: DashboardSettings, user: str, password: str) -> bool:
    """The configured user with its password, or any user with the token."""
    if settings.token and hmac.compare_digest(password.encode(), settings.token.encode()):
        return True
    if settings.password_hash and hmac.compare_digest(user.encode(), settings.user.encode()):
        try:
            return check_password_hash(settings.password_hash, password)
        except (ValueError, TypeError):  # a malformed configured hash refuses, never crashes
            return False
    return False


def sign_in(
    settings: DashboardSettings, users: Users | None, user: str, password: str
) -> tuple[str, bool] | None:
    """``(role, built_in)`` for a right password, else None. Raises StorageUnavailable when
    the users' table cannot be read."""
    if check_credentials(settings, user, password):
        return ADMIN, True
    directory = users() if users is not None else None
    if directory is None:
        return None
    role = directory.verify(user, password)
    return None if role is None else (role, False)


def session_role(session: MutableMapping[str, Any], users: Users | None) -> str | None:
    """The role of a valid session now; None when its user is gone or disabled."""
    # Sessions signed before users existed carry no flag: they were all built-in logins.
    if session.get("builtin", True):
        return ADMIN
    directory = users() if users is not None else None
    name = session.get("user")
    if directory is None or not isinstance(name, str):
        return None
    return directory.role(name)


def users_for(repo: object, telemetry: DashboardTelemetry) -> Users:
    """The one directory over ``repo``'s Cassandra session, built (its table created) on first
    use; None for a repository without one."""
    made: list[UserDirectory | None] = []
    lock = threading.Lock()

    def directory() -> UserDirectory | None:
        with lock:
            if not made:
                session, keyspace = getattr(repo, "session", None), getattr(repo, "keyspace", None)
                if session is None or not isinstance(keyspace, str):
                    made.append(None)
                else:
                    from storage.users import UserStore

                    store = guarded(telemetry, "users_table", lambda: UserStore(session, keyspace))
                    made.append(UserDirectory(store, telemetry))
            return made[0]

    return directory


def tokens_for(repo: object, telemetry: DashboardTelemetry, users: Users) -> Tokens:
    """The one token directory over ``repo``'s Cassandra session (beside ``users``), built on
    first use; None for a repository without one."""
    made: list[TokenDirectory | None] = []
    lock = threading.Lock()

    def directory() -> TokenDirectory | None:
        with lock:
            if not made:
                session, keyspace = getattr(repo, "session", None), getattr(repo, "keyspace", None)
                people = users()
                if session is None or not isinstance(keyspace, str) or people is None:
                    made.append(None)
                else:
                    from storage.tokens import TokenStore

                    store = guarded(
                        telemetry, "tokens_table", lambda: TokenStore(session, keyspace)
                    )
                    made.append(TokenDirectory(store, people, telemetry))
            return made[0]

    return directory
