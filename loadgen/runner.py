"""The function API of the load generator: :func:`run_load` generates the fleet second by
second, feeds a sink (the ingest over HTTP, Kafka directly, or nothing), keeps the truth for
the given queries, and returns a summary. ``apm loadgen`` and the benchmarks call it.

Pacing: real time (``start`` None) stamps each second with the wall clock and sends it then;
backfill (``start`` set) generates ``duration`` seconds from ``start`` as fast as the sink
takes them, the sink's in-flight bound giving back-pressure.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from apm.model import Sample
from apm.query import Query
from loadgen.fleet import Fleet, Tick
from loadgen.settings import LoadgenSettings
from loadgen.stats import ProgressPrinter, Stats
from loadgen.truth import TruthCollector

__all__ = [
    "LoadResult",
    "NullSink",
    "Sink",
    "SinkFactory",
    "expected_samples",
    "make_sink",
    "run_load",
]


class Sink(Protocol):
    async def submit(self, tick: Tick) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class NullSink:
    """Generates without sending (``--dry-run``): every sample counts as accepted."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats

    async def submit(self, tick: Tick) -> None:
        self.stats.add(sent=tick.samples, accepted=tick.samples)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


SinkFactory = Callable[[LoadgenSettings, Fleet, Stats, threading.Event], Sink]


@dataclass
class LoadResult:
    summary: dict[str, Any]
    fleet: Fleet
    truths: list[TruthCollector] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return int(self.summary["lost"])


def expected_samples(settings: LoadgenSettings) -> list[Sample]:
    """Every sample a backfill run with ``settings`` generates, replayed from the seed: what
    must arrive downstream (tests and end-to-end checks compare against it)."""
    if settings.start is None:
        raise ValueError("only a backfill run (start set) can be replayed")
    fleet = _fleet(settings)
    out: list[Sample] = []
    for k in range(settings.ticks):
        out.extend(fleet.samples(fleet.step(settings.start + k)))
    return out


def _fleet(settings: LoadgenSettings) -> Fleet:
    return Fleet(
        settings.servers,
        settings.metrics,
        settings.seed,
        settings.silent_fraction,
        settings.metric_prefix,
    )


def make_sink(
    settings: LoadgenSettings,
    fleet: Fleet,
    stats: Stats,
    stop: threading.Event,
    dry_run: bool = False,
) -> Sink:
    if dry_run:
        return NullSink(stats)
    if settings.direct_kafka:
        from loadgen.kafka_sink import KafkaSink

        return KafkaSink(settings, fleet, stats, stop=stop)
    from loadgen.http_sink import HttpSink

    return HttpSink(settings, fleet, stats, stop=stop)


async def drive(
    settings: LoadgenSettings,
    fleet: Fleet,
    sink: Sink,
    stats: Stats,
    truths: Sequence[TruthCollector],
    stop: threading.Event,
    *,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> float:
    """Steps the fleet through every second of the run into ``sink``, then drains it.
    Returns the first second generated."""
    realtime = settings.start is None
    first = float(math.ceil(wall())) if realtime else float(settings.start or 0)
    cycle: list[Tick] = []  # replay mode: the generated seconds, in order
    try:
        for k in range(settings.ticks):
            if stop.is_set():
                break
            ts = first + k
            if realtime:
                ahead = ts - wall()
                if ahead > 0:
                    await sleep(ahead)
                elif ahead < -1.0:
                    stats.add(late_ticks=1)
            size = settings.replay_seconds
            tick = _replayed(fleet, cycle, size, k, ts) if size else fleet.step(ts)
            for truth in truths:
                truth.add(tick)
            stats.add(ticks=1, generated=tick.samples)
            await sink.submit(tick)
    finally:
        await sink.drain()
    return first


def _replayed(fleet: Fleet, cycle: list[Tick], size: int, k: int, ts: float) -> Tick:
    """Second ``k`` of a run that replays ``size`` seconds: the fleet's values of second
    ``k mod size``, at ``ts``. The cycle is generated as it is first needed, so its first pass
    costs what a normal run costs and every later one only the timestamp."""
    index = k % size
    if index == len(cycle):
        cycle.append(replace(fleet.step(ts), replay_index=index))
    return replace(cycle[index], ts=ts)


def run_load(
    settings: LoadgenSettings | None = None,
    *,
    queries: Sequence[Query] = (),
    stop: threading.Event | None = None,
    sink_factory: SinkFactory | None = None,
    dry_run: bool = False,
    progress: bool = True,
) -> LoadResult:
    """Runs one load and returns its summary and the truth for each query. Setting ``stop``
    (from another thread or a signal handler) ends generation early; what is in flight is
    still drained. ``sink_factory`` swaps the transport (tests pass one with an injected
    client). Raises ValueError for a query the fleet cannot answer."""
    settings = settings or LoadgenSettings()
    stop = stop or threading.Event()
    fleet = _fleet(settings)
    truths = [TruthCollector(q, fleet) for q in queries]
    stats = Stats()
    if sink_factory is not None:
        sink = sink_factory(settings, fleet, stats, stop)
    else:
        sink = make_sink(settings, fleet, stats, stop, dry_run)
    stats.start()
    try:
        if progress:
            with ProgressPrinter(stats, settings.progress_interval_s):
                first = asyncio.run(drive(settings, fleet, sink, stats, truths, stop))
        else:
            first = asyncio.run(drive(settings, fleet, sink, stats, truths, stop))
    finally:
        stats.finish()
        sink.close()
    mode = "dry-run" if dry_run else ("kafka" if settings.direct_kafka else "http")
    summary = stats.summary(
        mode=mode,
        pacing="realtime" if settings.start is None else "backfill",
        servers=settings.servers,
        metrics=settings.metrics,
        seed=settings.seed,
        silent_servers=len(fleet.silent_servers()),
        stopped_early=stop.is_set(),
        first_ts=first,
        last_ts=first + stats.ticks - 1 if stats.ticks else None,
        target=settings.kafka_bootstrap if settings.direct_kafka else settings.url,
    )
    return LoadResult(summary, fleet, truths)
