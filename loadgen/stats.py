"""Counters shared by the sender threads, the live progress line and the final JSON summary."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

__all__ = ["ProgressPrinter", "Stats"]


def _percentiles(latencies: list[float]) -> tuple[float | None, float | None]:
    if not latencies:
        return None, None
    p50, p99 = np.percentile(np.asarray(latencies), [50, 99])
    return float(p50) * 1000, float(p99) * 1000


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}ms"


@dataclass
class Stats:
    """Totals for a run. Every method is safe to call from any thread."""

    clock: Callable[[], float] = time.monotonic
    generated: int = 0  # samples the fleet produced (alive servers only)
    sent: int = 0  # samples handed to the transport
    accepted: int = 0  # samples the target acknowledged
    rejected: int = 0  # samples the target refused for good (4xx other than 429)
    failed: int = 0  # samples given up on after retries (network, 503 past the deadline)
    requests: int = 0
    retries: int = 0
    ambiguous_retries: int = 0  # retries after a timeout: the first try may have landed
    ticks: int = 0
    late_ticks: int = 0  # real time only: seconds generated after their wall-clock second
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    reservoir: int = 100_000
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _started: float | None = field(default=None, repr=False)
    _finished: float | None = field(default=None, repr=False)
    _window: list[float] = field(default_factory=list, repr=False)
    _seen: int = field(default=0, repr=False)
    _rand: random.Random = field(default_factory=lambda: random.Random(0), repr=False)
    _last_accepted: int = field(default=0, repr=False)
    _last_at: float | None = field(default=None, repr=False)

    def start(self) -> None:
        self._started = self._last_at = self.clock()

    def finish(self) -> None:
        self._finished = self.clock()

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def error(self, reason: str, samples: int = 0, *, rejected: bool = False) -> None:
        with self._lock:
            self.errors[reason] += 1
            if rejected:
                self.rejected += samples
            else:
                self.failed += samples

    def latency(self, seconds: float) -> None:
        with self._lock:
            # A uniform reservoir (Algorithm R) keeps week-long runs in bounded memory.
            self._seen += 1
            if len(self.latencies) < self.reservoir:
                self.latencies.append(seconds)
            else:
                slot = self._rand.randrange(self._seen)
                if slot < self.reservoir:
                    self.latencies[slot] = seconds
            self._window.append(seconds)

    @property
    def elapsed(self) -> float:
        if self._started is None:
            return 0.0
        end = self._finished if self._finished is not None else self.clock()
        return max(end - self._started, 1e-9)

    def progress_line(self) -> str:
        """The live line: totals, the recent accepted rate, and recent latency p50/p99."""
        now = self.clock()
        with self._lock:
            window, self._window = self._window, []
            accepted, last, self._last_accepted = self.accepted, self._last_accepted, self.accepted
            since = now - (self._last_at if self._last_at is not None else now)
            self._last_at = now
            errors = sum(self.errors.values())
            sent, rejected, failed = self.sent, self.rejected, self.failed
        rate = (accepted - last) / since if since > 0 else 0.0
        p50, p99 = _percentiles(window)
        return (
            f"[loadgen {self.elapsed:6.1f}s] sent={sent} accepted={accepted} "
            f"rejected={rejected} failed={failed} samples/s={rate:,.0f} "
            f"p50={_ms(p50)} p99={_ms(p99)} errors={errors}"
        )

    def summary(self, **extra: Any) -> dict[str, Any]:
        with self._lock:
            p50, p99 = _percentiles(self.latencies)
            return {
                "elapsed_s": round(self.elapsed, 3),
                "ticks": self.ticks,
                "late_ticks": self.late_ticks,
                "generated": self.generated,
                "sent": self.sent,
                "accepted": self.accepted,
                "rejected": self.rejected,
                "failed": self.failed,
                "lost": self.generated - self.accepted,
                "requests": self.requests,
                "retries": self.retries,
                "ambiguous_retries": self.ambiguous_retries,
                "accepted_per_s": round(self.accepted / self.elapsed, 1) if self.elapsed else 0.0,
                "latency_p50_ms": None if p50 is None else round(p50, 2),
                "latency_p99_ms": None if p99 is None else round(p99, 2),
                "errors": dict(self.errors),
                **extra,
            }


class ProgressPrinter:
    """Prints :meth:`Stats.progress_line` every ``interval_s`` from a daemon thread."""

    def __init__(self, stats: Stats, interval_s: float = 1.0, out: TextIO | None = None) -> None:
        self.stats, self.interval_s = stats, interval_s
        self.out = out or sys.stderr
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="loadgen-progress", daemon=True)

    def __enter__(self) -> ProgressPrinter:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        print(self.stats.progress_line(), file=self.out, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            print(self.stats.progress_line(), file=self.out, flush=True)
