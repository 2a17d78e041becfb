"""The dashboard's settings (env prefix ``APM_DASHBOARD_``); keyword arguments win over env."""

from __future__ import annotations

import math
import string
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings

from apm.settings import env_config, shared
from apm.tls import check_server_files
from dashboard.proxy_trust import header_name_error, parse_networks
from dashboard.roles import VIEWER, parse_role

__all__ = ["MIN_TOKEN_BITS", "DashboardSettings", "token_bits"]

# A token is tried offline by nobody, but online guessing over many addresses (the throttle is
# per client) must stay hopeless: 128 bits. `make run` generates `secrets.token_urlsafe(24)`.
MIN_TOKEN_BITS = 128
_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits)


def token_bits(token: str) -> float:
    """An upper bound on the entropy of ``token``, as if each character were drawn uniformly
    from the union of the character classes it uses (lower, upper, digits, each other
    character its own): `token_urlsafe(24)` scores at least 182, `uuid4().hex` 165. A token
    that repeats a shorter one (``aaaa...``, ``abcabc...``) scores that shorter one. It catches
    an operator's mistake (a word, a short or repeated string), not every guessable token."""
    period = next(
        p for p in range(1, len(token) + 1) if token == (token[:p] * len(token))[: len(token)]
    )
    pool = sum(len(c) for c in _CLASSES if any(ch in c for ch in token))
    pool += len({ch for ch in token if not any(ch in c for c in _CLASSES)})
    return period * math.log2(max(2, pool))


class DashboardSettings(BaseSettings):
    model_config = env_config("APM_DASHBOARD_")

    host: str = "127.0.0.1"
    port: int = Field(default=8050, ge=0, le=65535)
    # HTTPS (docs/security.md): with tls_cert and tls_key the dashboard speaks only HTTPS and
    # its cookies are Secure; the pair is reloaded within tls_reload_s of a change, open
    # connections kept. With tls_client_ca every browser or client must present a certificate
    # from that CA at the handshake (and still sign in). Without them: plain HTTP (make run,
    # on loopback).
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    tls_reload_s: float = Field(default=10.0, gt=0)
    # Login: a user with a werkzeug password hash (`apm dashboard hash-password`), or a token,
    # or both. The app refuses to start with neither: an open dashboard is never the default.
    user: str = "admin"
    password_hash: str = ""
    token: str = ""
    # The HMAC key of the session cookie, the same on every replica (at least 16 characters);
    # a random one per process when empty (logins end on restart, other replicas refuse them).
    secret_key: str = ""
    session_hours: float = Field(default=12.0, gt=0)
    # Login attempts (each runs scrypt) per client address: a burst, refilled per minute; and
    # for the whole process: a burst, refilled per second. Past either: 429 + Retry-After.
    login_client_burst: int = Field(default=5, ge=1)
    login_client_per_minute: float = Field(default=5.0, gt=0)
    login_global_burst: int = Field(default=20, ge=1)
    login_global_per_second: float = Field(default=2.0, gt=0)
    # Reverse proxies in front of the dashboard that append X-Forwarded-For (an ingress: 1).
    # 0 trusts no header: the client is the TCP peer (behind a proxy, then, every user shares
    # one login bucket).
    proxy_hops: int = Field(default=0, ge=0, le=5)
    # A larger API request body is refused (413) before it is read.
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # ... and a Dash callback's (the page's inputs and states as JSON; a dashboard's panels
    # edited as text are the largest, bounded at 1 MiB by the dashboards API too).
    callback_max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=64 * 1024)
    # Live refresh: the default interval, and the floor no browser can go below, so that many
    # open wall screens cannot turn into a read storm on Cassandra.
    refresh_seconds: float = Field(default=5.0, gt=0)
    refresh_floor_seconds: float = Field(default=2.0, gt=0)
    # Points per series before the server downsamples (about the chart's width in pixels).
    max_points: int = Field(default=1200, ge=10)
    # Live charts re-read only their newest windows: this far back (late samples still rewrite
    # them), and everything again after full_refresh_seconds.
    reread_seconds: float = Field(default=600.0, ge=0)
    full_refresh_seconds: float = Field(default=300.0, ge=0)
    silent_after_seconds: float = Field(default=30.0, gt=0)
    # APM_DASHBOARD_KAFKA_BOOTSTRAP, else the shared APM_KAFKA_BOOTSTRAP (apm.settings).
    kafka_bootstrap: str = shared("APM_DASHBOARD_", "kafka_bootstrap")
    topics_cache_seconds: float = Field(default=10.0, ge=0)
    # The health page's Agents card reads this many seconds of the agent.version topic.
    agents_lookback_seconds: float = Field(default=10.0, gt=0, le=3600)
    # The ingest's Prometheus endpoints (comma-separated) and the counters the health page reads:
    # samples{outcome="accepted"} gives the rate, requests{outcome="rejected",reason=...} the
    # rejects (a rejected request may carry no countable sample, e.g. a body that is not JSON).
    ingest_metrics_urls: str = "http://127.0.0.1:8080/metrics"
    ingest_samples_metric: str = "apm_ingest_samples"
    ingest_requests_metric: str = "apm_ingest_requests"
    ingest_outcome_label: str = "outcome"
    reject_reason_label: str = "reason"
    scrape_timeout_seconds: float = Field(default=2.0, gt=0)
    # The alert evaluator's /metrics (`apm alert run`): the health page's receivers card.
    # Empty: not watched.
    alerting_metrics_url: str = "http://127.0.0.1:9107/metrics"

    @field_validator("token")
    @classmethod
    def _strong_token(cls, token: str) -> str:
        if token and token_bits(token) < MIN_TOKEN_BITS:
            raise ValueError(
                f"APM_DASHBOARD_TOKEN is too weak: about {token_bits(token):.0f} bits, at least "
                f"{MIN_TOKEN_BITS} needed (e.g. 24 random letters and digits); generate one with "
                "python -c 'import secrets; print(secrets.token_urlsafe(24))'"
            )
        return token

    @model_validator(mode="after")
    def _tls_files(self) -> DashboardSettings:
        check_server_files("APM_DASHBOARD_", self.tls_cert, self.tls_key, self.tls_client_ca)
        return self

    @property
    def https(self) -> bool:
        """Served over HTTPS: the cookies carry the Secure flag."""
        return self.tls_cert is not None

    @property
    def ingest_urls(self) -> list[str]:
        return [u.strip() for u in self.ingest_metrics_urls.split(",") if u.strip()]

    def clamp_refresh(self, seconds: float | None) -> float:
        """The interval used: the request, or the default, never below the floor."""
        wanted = self.refresh_seconds if seconds is None or seconds != seconds else seconds
        return max(self.refresh_floor_seconds, float(wanted))

    # Auth proxy, single sign-on (docs/security.md): a request from one of the trusted proxies'
    # addresses (comma-separated addresses or CIDR blocks, checked against the connection's
    # peer, never X-Forwarded-For) that carries auth_proxy_header signs in as the user it
    # names. The header from any other address is ignored. An unknown name becomes a user with
    # auth_proxy_default_role (no password) unless auto sign-up is off.
    auth_proxy_enabled: bool = False
    auth_proxy_header: str = "X-WEBAUTH-USER"
    auth_proxy_trusted: str = ""
    auth_proxy_auto_sign_up: bool = True
    auth_proxy_default_role: str = VIEWER

    @field_validator("auth_proxy_header")
    @classmethod
    def _proxy_header(cls, name: str) -> str:
        if (err := header_name_error(name)) is not None:
            raise ValueError(f"APM_DASHBOARD_AUTH_PROXY_HEADER: {err}")
        return name

    @field_validator("auth_proxy_trusted")
    @classmethod
    def _proxy_trusted(cls, text: str) -> str:
        try:
            parse_networks(text)
        except ValueError as exc:
            raise ValueError(f"APM_DASHBOARD_AUTH_PROXY_TRUSTED: {exc}") from None
        return text

    @field_validator("auth_proxy_default_role")
    @classmethod
    def _proxy_role(cls, role: str) -> str:
        try:
            return parse_role(role)
        except ValueError as exc:
            raise ValueError(f"APM_DASHBOARD_AUTH_PROXY_DEFAULT_ROLE: {exc}") from None

    @model_validator(mode="after")
    def _proxy_needs_trusted(self) -> DashboardSettings:
        if self.auth_proxy_enabled and not parse_networks(self.auth_proxy_trusted):
            raise ValueError(
                "APM_DASHBOARD_AUTH_PROXY_ENABLED needs APM_DASHBOARD_AUTH_PROXY_TRUSTED: the "
                "addresses of the proxies whose header is believed (e.g. 10.0.0.5 or "
                "10.0.0.0/24); the header of any other address is ignored"
            )
        return self
