"""Who a password or a session is, and with which role (:mod:`dashboard.roles`): the one
check behind the login page (:mod:`dashboard.auth`) and the Prometheus API's Basic auth
(:mod:`dashboard.promapi.access`).

- The configured login (``APM_DASHBOARD_USER`` with ``APM_DASHBOARD_PASSWORD_HASH``) and the
  token (``APM_DASHBOARD_TOKEN``, as a password with any user name) are ``admin``, as before
  there were users: the *built-in* logins.
- Any other name is a user of ``apm user`` (:mod:`dashboard.users`), with its stored role.
- A Bearer token (:func:`check_bearer`) is the dashboard's own (``admin``) or a user's API
  token (:mod:`dashboard.api_tokens`), with the token's role.

A session remembers whether it is built-in; a user's session gets its role from the store on
each request (cached a few seconds), so a role change or a disable reaches it.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from werkzeug.security import check_password_hash

from dashboard.api_tokens import TokenDirectory, TokenHolder, looks_like_token
from dashboard.guard import guarded
from dashboard.roles import ADMIN
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry
from dashboard.throttle import LoginThrottle
from dashboard.users import UserDirectory

__all__ = [
    "BUILT_IN_TOKEN",
    "BearerRefusal",
    "Tokens",
    "Users",
    "check_bearer",
    "check_credentials",
    "same_secret",
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


# APM_DASHBOARD_TOKEN acts as the built-in admin.
BUILT_IN_TOKEN = TokenHolder("token", ADMIN, "APM_DASHBOARD_TOKEN", "")


@dataclass(frozen=True)
class BearerRefusal:
    status: int  # 401 (wrong token) or 429 (too many wrong tokens from this client)
    detail: str
    retry_after: int = 0


def check_bearer(
    settings: DashboardSettings,
    throttle: LoginThrottle,
    telemetry: DashboardTelemetry,
    token: str | None,
    client: str,
    tokens: Tokens | None = None,
) -> BearerRefusal | TokenHolder:
    """Who ``token`` acts for: the dashboard's own token (``admin``) or a user's API token
    (:mod:`dashboard.api_tokens`, its own role). A wrong, expired or revoked one takes from
    ``client``'s login bucket; once it is empty the token is not even compared (429 +
    Retry-After), so the answer tells a guesser nothing until the bucket refills. Raises
    StorageUnavailable when an API token cannot be checked."""
    wait = throttle.client_wait(client)
    if wait:
        telemetry.refused.labels("throttled_bearer").inc()
        return BearerRefusal(
            429, f"too many wrong tokens from this client; retry in {wait} s", wait
        )
    if settings.token and same_secret(token, settings.token):
        return BUILT_IN_TOKEN
    directory = tokens() if tokens is not None and looks_like_token(token) else None
    holder = directory.verify(str(token)) if directory is not None else None
    if holder is not None:
        return holder
    throttle.failed(client)
    telemetry.refused.labels("bad_token").inc()
    return BearerRefusal(401, "invalid bearer token")


def same_secret(a: object, b: object) -> bool:
    """Both non-empty strings and equal, compared in constant time."""
    return (
        isinstance(a, str)
        and isinstance(b, str)
        and bool(a)
        and hmac.compare_digest(a.encode(), b.encode())
    )


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


def session_role(
    session: MutableMapping[str, Any], users: Users | None, proxied: str | None = None
) -> str | None:
    """The role of a valid session now; None when its user is gone or disabled. A session
    the auth proxy opened counts only while the proxy names its user (``proxied``, the user
    the request's trusted header names: :mod:`dashboard.auth_proxy`)."""
    if session.get("proxy") and (proxied is None or session.get("user") != proxied):
        return None
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
