import asyncio
import json
import threading

import pytest

from apm.cli import main
from loadgen.fleet import Fleet
from loadgen.runner import NullSink, drive
from loadgen.stats import Stats

pytestmark = pytest.mark.unit


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def wall(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


class Recorder(NullSink):
    def __init__(self, stats, clock: FakeClock | None = None, cost: float = 0.0) -> None:
        super().__init__(stats)
        self.ticks: list[float] = []
        self.clock, self.cost = clock, cost

    async def submit(self, tick):
        self.ticks.append(tick.ts)
        if self.clock:
            self.clock.now += self.cost  # sending takes this long
        await super().submit(tick)


def test_real_time_stamps_each_second_and_waits_for_it(make_settings):
    settings = make_settings(start=None, duration_s=4)
    clock = FakeClock(1000.25)
    stats = Stats()
    sink = Recorder(stats, clock, cost=0.1)
    asyncio.run(
        drive(
            settings,
            Fleet(5, 2),
            sink,
            stats,
            [],
            threading.Event(),
            wall=clock.wall,
            sleep=clock.sleep,
        )
    )
    assert sink.ticks == [1001.0, 1002.0, 1003.0, 1004.0]
    assert clock.sleeps == [0.75, 0.9, 0.9, 0.9]
    assert stats.late_ticks == 0 and stats.ticks == 4


def test_real_time_counts_late_seconds_without_skipping_them(make_settings):
    settings = make_settings(start=None, duration_s=3)
    clock = FakeClock(50.0)
    stats = Stats()
    sink = Recorder(stats, clock, cost=2.5)  # a sink slower than real time
    asyncio.run(
        drive(
            settings,
            Fleet(5, 2),
            sink,
            stats,
            [],
            threading.Event(),
            wall=clock.wall,
            sleep=clock.sleep,
        )
    )
    assert sink.ticks == [50.0, 51.0, 52.0] and stats.late_ticks == 2


def test_backfill_never_sleeps(make_settings):
    settings = make_settings(start=500.0, duration_s=5)
    clock = FakeClock(10_000.0)
    stats = Stats()
    sink = Recorder(stats)
    asyncio.run(
        drive(
            settings,
            Fleet(5, 2),
            sink,
            stats,
            [],
            threading.Event(),
            wall=clock.wall,
            sleep=clock.sleep,
        )
    )
    assert sink.ticks == [500.0, 501.0, 502.0, 503.0, 504.0] and clock.sleeps == []


def test_progress_line_and_summary():
    now = [0.0]
    stats = Stats(clock=lambda: now[0])
    stats.start()
    stats.add(generated=300, sent=300, accepted=200, requests=3)
    for ms in (10, 20, 30, 1000):
        stats.latency(ms / 1000)
    stats.error("422:bad_name", 100, rejected=True)
    now[0] = 2.0
    line = stats.progress_line()
    for part in (
        "sent=300",
        "accepted=200",
        "rejected=100",
        "samples/s=100",
        "p50=25.0ms",
        "errors=1",
    ):
        assert part in line
    assert "p50=-" in stats.progress_line()  # no request since the last line
    stats.finish()
    summary = stats.summary(mode="x")
    assert summary["lost"] == 100 and summary["accepted_per_s"] == 100.0
    assert summary["errors"] == {"422:bad_name": 1} and summary["mode"] == "x"


def test_latency_memory_is_bounded_and_still_representative():
    stats = Stats(reservoir=1000)
    for i in range(50_000):
        stats.latency((i % 100) / 1000)  # uniform over 0..99 ms
    assert len(stats.latencies) == 1000
    assert 40 < stats.summary()["latency_p50_ms"] < 60


def test_cli_dry_run_writes_the_truth(tmp_path, capsys):
    out = tmp_path / "truth.json"
    code = main(
        [
            "loadgen",
            "--servers",
            "40",
            "--metrics",
            "4",
            "--duration",
            "25s",
            "--start",
            "1763800000",
            "--dry-run",
            "--quiet",
            "--expect",
            str(out),
            "--query",
            "FROM web-*, db-* SELECT rpc.latency.max WINDOW 10s COMPUTE max, p99",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ticks"] == 25 and summary["mode"] == "dry-run"
    assert summary["expect"]["windows"] == 3
    truth = json.loads(out.read_text())
    assert truth["servers_matched"] == 20 and truth["functions"] == ["max", "p99"]
    assert [w["complete"] for w in truth["windows"]] == [True, True, False]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--query", "FROM * SELECT cpu.util"], "--expect and --query go together"),
        (["--expect", "x.json", "--query", "FROM * SELECT"], "bad --query"),
        (
            ["--expect", "x.json", "--query", "FROM * SELECT nope WINDOW 5s COMPUTE min"],
            "not generated by this fleet",
        ),
        (["--duration", "soon"], "duration"),
        (["--servers", "0"], "servers"),
        (["--target", "localhost:8000"], "http"),
    ],
)
def test_cli_bad_input_gets_a_clear_error(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["loadgen", "--dry-run", "--quiet", "--start", "0", "--duration", "1", *argv])
    assert code == 2
    assert message in capsys.readouterr().err
