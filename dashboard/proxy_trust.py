"""Whom the auth proxy's header is believed from (:mod:`dashboard.auth_proxy`): the settings'
parsing of the trusted proxies' addresses and of the header's name, and the trust decision.

The decision reads the TCP peer of the connection, never a header: with
``APM_DASHBOARD_PROXY_HOPS`` werkzeug's ProxyFix replaces ``REMOTE_ADDR`` with an address
taken from ``X-Forwarded-For``, which any client can write, so the peer is the one ProxyFix
kept aside (``werkzeug.proxy_fix.orig``). Standard library only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "Network",
    "header_name_error",
    "is_trusted",
    "parse_networks",
    "peer_address",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# An HTTP field name as nginx passes it on by default (no '_'), short enough to read.
_HEADER = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
# Headers that mean something else to the dashboard or to every proxy: naming the user in one
# of them would mix two meanings.
_RESERVED = frozenset(
    {
        "authorization",
        "cookie",
        "host",
        "content-length",
        "content-type",
        "x-csrftoken",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-real-ip",
    }
)


def parse_networks(text: str) -> tuple[Network, ...]:
    """The comma-separated addresses and CIDR blocks of ``text`` (``10.0.0.5, 10.1.0.0/16,
    fd00::/8``); raises ValueError naming the entry that is neither. A block with host bits set
    (``10.0.0.5/24``) is refused: it is most likely a typo for the address or the block."""
    networks = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry))
        except ValueError as exc:
            raise ValueError(
                f"bad trusted proxy address {entry[:80]!r}: an IPv4 or IPv6 address or a CIDR "
                f"block such as 10.0.0.0/8 ({exc})"
            ) from None
    return tuple(networks)


def header_name_error(name: str) -> str | None:
    """Why ``name`` cannot be the header that carries the user's name, or None."""
    if _HEADER.fullmatch(name) is None:
        return (
            f"bad header name {name[:70]!r}: 1 to 64 letters, digits or '-', starting with a "
            "letter (e.g. X-WEBAUTH-USER)"
        )
    if name.lower() in _RESERVED:
        return f"the header {name!r} already means something else; use e.g. X-WEBAUTH-USER"
    return None


def peer_address(environ: Mapping[str, Any]) -> str | None:
    """The address of the connection's other end (what the server saw), whatever
    ``X-Forwarded-For`` says."""
    orig = environ.get("werkzeug.proxy_fix.orig")
    if isinstance(orig, Mapping) and "REMOTE_ADDR" in orig:
        peer = orig.get("REMOTE_ADDR")
    else:
        peer = environ.get("REMOTE_ADDR")
    return peer if isinstance(peer, str) else None


def is_trusted(peer: str | None, networks: tuple[Network, ...]) -> bool:
    """Whether ``peer`` (an address as the server reports it) is in one of ``networks``.
    An IPv4 address arriving on an IPv6 socket (``::ffff:10.0.0.5``) is also the IPv4 one; an
    address that does not parse (a Unix socket's empty one) is never trusted."""
    if not peer:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    forms: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        forms.append(address.ipv4_mapped)
    return any(form in network for form in forms for network in networks)
