"""Network traffic per interface as per-second rates: bytes, packets, errors and drops."""

from __future__ import annotations

from agent.cardinality import matches
from agent.collectors.base import CollectorContext, CounterRates, name_part

__all__ = ["NetworkCollector"]

_FIELDS = (
    ("bytes_recv", "rx_bytes"),
    ("bytes_sent", "tx_bytes"),
    ("packets_recv", "rx_packets"),
    ("packets_sent", "tx_packets"),
    ("errin", "rx_errors"),
    ("errout", "tx_errors"),
    ("dropin", "rx_drops"),
    ("dropout", "tx_drops"),
)


class NetworkCollector:
    name = "network"

    def __init__(self, context: CollectorContext) -> None:
        self._psutil = context.psutil
        self._rates = CounterRates()
        self._exclude = context.filters.net_exclude

    def collect(self, now: float) -> dict[str, float]:
        out: dict[str, float] = {}
        for nic, counters in self._psutil.net_io_counters(pernic=True).items():
            if matches(nic, self._exclude):
                continue  # a per-container interface would be a new metric name per pod
            prefix = f"net.{name_part(nic, empty='if')}"
            for field, metric in _FIELDS:
                key = f"{prefix}.{metric}"
                rate = self._rates.rate(key, float(getattr(counters, field)), now)
                if rate is not None:
                    out[key] = rate
        return out
