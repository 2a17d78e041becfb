"""The auth proxy's trust decision (dashboard/proxy_trust.py) and its settings: addresses and
CIDR blocks of both families, the connection's peer whatever X-Forwarded-For says, and every
bad setting refused with the reason."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.test import EnvironBuilder

from dashboard.proxy_trust import header_name_error, is_trusted, parse_networks, peer_address
from dashboard.settings import DashboardSettings

pytestmark = pytest.mark.unit

TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"


@pytest.mark.parametrize(
    ("peer", "trusted", "expected"),
    [
        ("10.0.0.5", "10.0.0.5", True),
        ("10.0.0.6", "10.0.0.5", False),
        ("10.1.2.3", "10.1.0.0/16", True),
        ("10.2.0.1", "10.1.0.0/16", False),
        ("192.168.1.9", "10.0.0.0/8, 192.168.1.0/24", True),
        ("fd00::7", "fd00::/8", True),
        ("fe00::7", "fd00::/8", False),
        ("::1", "::1", True),
        ("::1", "127.0.0.1", False),  # an IPv6 loopback is not the IPv4 one
        ("127.0.0.1", "::1", False),
        ("::ffff:10.0.0.5", "10.0.0.5", True),  # IPv4 on an IPv6 socket is the IPv4 address
        ("::ffff:10.0.0.6", "10.0.0.0/30", False),
        ("10.0.0.5", "", False),  # trusting nothing believes nobody
        ("", "0.0.0.0/0", False),  # a Unix socket's peer has no address
        (None, "0.0.0.0/0", False),
        ("not an address", "0.0.0.0/0", False),
        ("10.0.0.5, 10.0.0.6", "10.0.0.0/8", False),  # a list is not a peer
    ],
)
def test_the_peer_is_trusted_only_inside_a_listed_block(
    peer: str | None, trusted: str, expected: bool
) -> None:
    assert is_trusted(peer, parse_networks(trusted)) is expected


@given(st.ip_addresses(), st.integers(min_value=0, max_value=128))
def test_trust_is_membership_of_the_block(address: object, prefix: int) -> None:
    assert isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address)
    prefix = min(prefix, address.max_prefixlen)
    block = ipaddress.ip_network(f"{address}/{prefix}", strict=False)
    assert is_trusted(str(address), (block,))
    outside = int(address) ^ (1 << (address.max_prefixlen - prefix)) if prefix else None
    if outside is not None:  # the neighbouring block of the same size
        assert not is_trusted(str(ipaddress.ip_address(outside)), (block,))


def _environ(remote: str, forwarded: str | None, hops: int) -> dict[str, object]:
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    environ = EnvironBuilder(path="/", headers=headers).get_environ()
    environ["REMOTE_ADDR"] = remote
    seen: dict[str, object] = {}

    def app(env: dict[str, object], start: object) -> list[bytes]:
        seen.update(env)
        return []

    if hops:
        ProxyFix(app, x_for=hops)(environ, lambda *a: None)  # type: ignore[arg-type]
    else:
        app(environ, None)
    return seen


@given(
    forwarded=st.lists(st.ip_addresses().map(str), min_size=1, max_size=4).map(", ".join),
    hops=st.integers(min_value=0, max_value=3),
)
def test_a_spoofed_x_forwarded_for_never_makes_a_peer_trusted(forwarded: str, hops: int) -> None:
    # The client at 203.0.113.9 claims to be (or to come through) anyone; only 127.0.0.0/8 and
    # ::/0 are trusted, which every address it names may be in.
    networks = parse_networks("127.0.0.0/8, 0.0.0.0/1, 128.0.0.0/1, ::/0")
    networks = tuple(n for n in networks if not n.overlaps(ipaddress.ip_network("203.0.113.9")))
    environ = _environ("203.0.113.9", forwarded, hops)
    assert peer_address(environ) == "203.0.113.9"
    assert not is_trusted(peer_address(environ), networks)


def test_behind_proxy_fix_the_peer_is_the_one_it_kept_aside() -> None:
    environ = _environ("10.0.0.5", "198.51.100.1", 1)
    assert environ["REMOTE_ADDR"] == "198.51.100.1"  # what the login throttle uses
    assert peer_address(environ) == "10.0.0.5"  # what the auth proxy trusts
    assert peer_address(_environ("10.0.0.5", None, 0)) == "10.0.0.5"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("10.0.0.300", "bad trusted proxy address '10.0.0.300'"),
        ("10.0.0.5/24", "has host bits set"),
        ("localhost", "bad trusted proxy address 'localhost'"),
        ("10.0.0.0/33", "bad trusted proxy address"),
    ],
)
def test_a_bad_trusted_address_is_refused_naming_it(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_networks(text)
    with pytest.raises(ValidationError, match="APM_DASHBOARD_AUTH_PROXY_TRUSTED"):
        DashboardSettings(token=TOKEN, auth_proxy_trusted=text)


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("", "bad header name"),
        ("X_WEBAUTH_USER", "bad header name"),  # nginx drops a header with '_' by default
        ("X-User: x", "bad header name"),
        ("1-User", "bad header name"),
        ("x" * 65, "bad header name"),
        ("Authorization", "already means something else"),
        ("x-forwarded-for", "already means something else"),
        ("Cookie", "already means something else"),
    ],
)
def test_a_bad_header_name_is_refused(name: str, match: str) -> None:
    err = header_name_error(name)
    assert err is not None and match in err
    with pytest.raises(ValidationError, match="APM_DASHBOARD_AUTH_PROXY_HEADER"):
        DashboardSettings(token=TOKEN, auth_proxy_header=name)


def test_the_settings_read_the_environment_and_need_a_trusted_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = DashboardSettings(token=TOKEN)
    assert plain.auth_proxy_enabled is False
    assert (plain.auth_proxy_header, plain.auth_proxy_default_role) == ("X-WEBAUTH-USER", "viewer")
    assert plain.auth_proxy_auto_sign_up is True
    monkeypatch.setenv("APM_DASHBOARD_AUTH_PROXY_ENABLED", "true")
    with pytest.raises(ValidationError, match="needs APM_DASHBOARD_AUTH_PROXY_TRUSTED"):
        DashboardSettings(token=TOKEN)
    monkeypatch.setenv("APM_DASHBOARD_AUTH_PROXY_TRUSTED", "10.0.0.5, fd00::/8")
    monkeypatch.setenv("APM_DASHBOARD_AUTH_PROXY_HEADER", "X-Remote-User")
    monkeypatch.setenv("APM_DASHBOARD_AUTH_PROXY_AUTO_SIGN_UP", "false")
    monkeypatch.setenv("APM_DASHBOARD_AUTH_PROXY_DEFAULT_ROLE", "editor")
    s = DashboardSettings(token=TOKEN)
    assert s.auth_proxy_enabled and not s.auth_proxy_auto_sign_up
    assert (s.auth_proxy_header, s.auth_proxy_default_role) == ("X-Remote-User", "editor")
    assert len(parse_networks(s.auth_proxy_trusted)) == 2
    monkeypatch.setenv("APM_DASHBOARD_AUTH_PROXY_DEFAULT_ROLE", "root")
    with pytest.raises(ValidationError, match="AUTH_PROXY_DEFAULT_ROLE: unknown role 'root'"):
        DashboardSettings(token=TOKEN)
