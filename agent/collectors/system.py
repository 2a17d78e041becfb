"""Process count, TCP connections by state, and uptime.

TCP states come from netlink sock_diag (agent.collectors.tcpdiag), else /proc/net/tcp and tcp6,
else psutil. psutil.net_connections() would also map every socket to its process by walking
every process's file descriptors, far beyond the 1% CPU budget on a busy host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from agent.collectors.base import CollectorContext
from agent.collectors.tcpdiag import tcp_state_codes

__all__ = ["TCP_STATES", "SystemCollector", "count_tcp_states", "proc_tcp_lines"]

log = logging.getLogger(__name__)
# Kernel state codes (include/net/tcp_states.h) to the names used in metric names.
TCP_STATES = {
    "01": "established",
    "02": "syn_sent",
    "03": "syn_recv",
    "04": "fin_wait1",
    "05": "fin_wait2",
    "06": "time_wait",
    "07": "close",
    "08": "close_wait",
    "09": "last_ack",
    "0A": "listen",
    "0B": "closing",
}
_PSUTIL_STATES = {
    "SYN_RECV": "syn_recv",
    "SYN_SENT": "syn_sent",
    "FIN_WAIT1": "fin_wait1",
    "FIN_WAIT2": "fin_wait2",
    "TIME_WAIT": "time_wait",
    "CLOSE": "close",
    "CLOSE_WAIT": "close_wait",
    "LAST_ACK": "last_ack",
    "LISTEN": "listen",
    "CLOSING": "closing",
    "ESTABLISHED": "established",
}


def proc_tcp_lines(proc_root: str) -> Iterable[str] | None:
    lines: list[str] = []
    found = False
    for name in ("tcp", "tcp6"):
        try:
            text = (Path(proc_root) / "net" / name).read_text()
        except OSError:
            continue
        found = True
        lines.extend(text.splitlines()[1:])
    return lines if found else None


def count_tcp_states(lines: Iterable[str]) -> dict[str, float]:
    counts = dict.fromkeys(TCP_STATES.values(), 0.0)
    for line in lines:
        fields = line.split(None, 4)
        if len(fields) > 3 and (state := TCP_STATES.get(fields[3].upper())):
            counts[state] += 1
    return counts


class SystemCollector:
    name = "system"

    def __init__(
        self,
        context: CollectorContext,
        tcp_lines: Callable[[], Iterable[str] | None] | None = None,
        tcp_codes: Callable[[], dict[int, int] | None] | None = None,
    ) -> None:
        self._psutil = context.psutil
        self._tcp_lines = tcp_lines or (lambda: proc_tcp_lines(context.proc_root))
        # Injected fakes (tcp_lines) bypass netlink; the real host uses it first.
        self._tcp_codes = tcp_codes or (tcp_state_codes if tcp_lines is None else lambda: None)
        self._boot = float(self._psutil.boot_time())

    def _tcp(self) -> dict[str, float]:
        codes = self._tcp_codes()
        if codes is not None:
            counts = dict.fromkeys(TCP_STATES.values(), 0.0)
            for code, n in codes.items():
                if state := TCP_STATES.get(f"{code:02X}"):
                    counts[state] += n
            return counts
        lines = self._tcp_lines()
        if lines is not None:
            return count_tcp_states(lines)
        counts = dict.fromkeys(TCP_STATES.values(), 0.0)
        try:
            for conn in self._psutil.net_connections(kind="tcp"):
                if state := _PSUTIL_STATES.get(conn.status):
                    counts[state] += 1
        except (OSError, RuntimeError) as exc:  # AccessDenied derives from Exception only
            log.debug("tcp connections unavailable: %s", exc)
        return counts

    def collect(self, now: float) -> dict[str, float]:
        out = {"proc.count": float(len(self._psutil.pids())), "uptime": max(0.0, now - self._boot)}
        out.update({f"tcp.{state}": n for state, n in self._tcp().items()})
        return out
