"""TCP socket counts by state through netlink sock_diag (what `ss -s` uses).

Reading /proc/net/tcp costs the kernel a walk of its whole hash table with text formatting:
about 50 ms of CPU per read on the reference machine, 5% of a core at 1 Hz. The netlink dump
of the same sockets costs about 1 ms. Returns None where netlink is unavailable (not Linux,
or a sandbox that forbids it) so the caller can fall back.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["tcp_state_codes"]

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: len, type, flags, seq, pid
# inet_diag_req_v2: family, protocol, ext, pad, states bitmask, then a zeroed inet_diag_sockid.
_REQUEST = struct.Struct("=BBBBI48x")


def _dump(sock: socket.socket, family: int, counts: dict[int, int]) -> bool:
    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
    sock.send(
        _HEADER.pack(
            _HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0
        )
        + request
    )
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return False
        pos = 0
        while pos + _HEADER.size <= len(data):
            length, kind = struct.unpack_from("=IH", data, pos)
            if kind == _NLMSG_DONE:
                return True
            if kind == _NLMSG_ERROR or length < _HEADER.size + 2:
                return False
            state = data[pos + _HEADER.size + 1]  # inet_diag_msg.idiag_state
            counts[state] = counts.get(state, 0) + 1
            pos += (length + 3) & ~3


def tcp_state_codes() -> dict[int, int] | None:
    """Kernel TCP state code (1 = ESTABLISHED ... 11 = CLOSING) -> sockets, IPv4 and IPv6."""
    counts: dict[int, int] = {}
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as sock:
            sock.settimeout(2.0)
            for family in (socket.AF_INET, socket.AF_INET6):
                if not _dump(sock, family, counts):
                    return None
    except (OSError, AttributeError):  # AttributeError: no AF_NETLINK on this platform
        return None
    return counts
