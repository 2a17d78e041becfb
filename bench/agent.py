"""``make bench-agent``: the agent's overhead.

1. Host collectors at 1 Hz: the real agent process (``apm agent run``, StatsD off) pushing to a
   local HTTP sink that answers 202, sampled for CPU (% of one core) and RSS.
2. StatsD: a listener process pinned to one core while another process floods it with UDP
   packets; reported is what the listener handled per second (packets the kernel dropped
   because the listener fell behind are not counted).

Figures go to docs/BENCHMARKS.md (section "agent") via bench.base.
"""

from __future__ import annotations

import http.server
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from bench.base import progress, write_section
from bench.process_sample import Sink, cpu_and_rss

__all__ = ["bench_host", "bench_statsd", "main"]

COMMAND = "make bench-agent"
_PACKETS = [
    b"app.rpc.latency:%d|ms|#env:prod",
    b"app.rpc.calls:1|c",
    b"app.queue.depth:%d|g",
    b"app.users:u%d|s",
    b"app.payload.size:%d|h|@0.5",
]


def bench_host(seconds: float) -> dict[str, float]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="apm-agent-bench-") as tmp:
        env = {
            **os.environ,
            "APM_AGENT_INGEST_URL": f"http://127.0.0.1:{server.server_address[1]}/v1/metrics",
            "APM_AGENT_SPOOL_DIR": str(Path(tmp) / "spool"),
            "APM_AGENT_STATSD_ENABLED": "0",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "apm.cli", "agent", "run"], env=env, stderr=subprocess.DEVNULL
        )
        try:
            figures = cpu_and_rss(psutil.Process(proc.pid), seconds, "host collectors")
        finally:
            proc.terminate()
            proc.wait(10)
            server.shutdown()
    return figures


def _listener(port_out: Any, result: Any, seconds: float) -> None:
    from agent.statsd import StatsdAggregator, StatsdListener

    os.sched_setaffinity(0, {0})
    listener = StatsdListener(StatsdAggregator(time.time, timer_stats=["count"]), "127.0.0.1", 0)
    port_out.put(listener.address[1])
    listener.start()
    before = listener.aggregator.packets
    cpu0, t0 = time.process_time(), time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        time.sleep(0.2)
        listener.aggregator.flush(time.time())  # the agent's once-a-second work, and more
    handled = listener.aggregator.packets - before
    result.put(
        (
            handled / (time.monotonic() - t0),
            100 * (time.process_time() - cpu0) / (time.monotonic() - t0),
        )
    )
    listener.stop()


def _sender(port: int, seconds: float) -> None:
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    packets = [p % i if b"%d" in p else p for i in range(1, 200) for p in _PACKETS]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(("127.0.0.1", port))  # a connected socket skips the address lookup per send
    send = sock.send
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for packet in packets:
            try:
                send(packet)
            except ConnectionRefusedError:  # the listener has finished its trial
                return


def bench_statsd(seconds: float, trials: int) -> dict[str, float]:
    context = multiprocessing.get_context("fork")
    rates, cpus, per_core = [], [], []
    for trial in range(trials):
        port_q, result_q = context.Queue(), context.Queue()
        listener = context.Process(target=_listener, args=(port_q, result_q, seconds))
        listener.start()
        sender = context.Process(target=_sender, args=(port_q.get(timeout=30), seconds + 1))
        sender.start()
        rate, cpu = result_q.get(timeout=seconds + 60)
        listener.join(10)
        sender.join(seconds + 10)
        rates.append(rate)
        cpus.append(cpu)
        per_core.append(rate / max(cpu / 100, 1e-9))
        progress(
            f"statsd trial {trial + 1}/{trials}: {rate:,.0f} packets/s, "
            f"listener cpu {cpu:.0f}% of one core"
        )
    return {
        "packets_per_s_median": statistics.median(rates),
        "listener_cpu_pct_median": statistics.median(cpus),
        "packets_per_cpu_s_median": statistics.median(per_core),
    }


def _package_rows(deb: Path, root: Path, seconds: float) -> tuple[list[list[str]], str]:
    from bench.agent_deb import bench_package

    progress(f"packaged agent on the clean root {root} for {seconds:.0f}s")
    pkg = bench_package(deb, root, seconds)
    rows = [
        ["the .deb (MiB)", f"{pkg['deb_mib']:.1f} ({deb.name})", "<= 40"],
        [
            "installed size (MiB; dpkg's Installed-Size, /opt/apm-agent after postinst)",
            f"{pkg['installed_mib']:.1f}, {pkg['opt_mib']:.1f}",
            "",
        ],
        [
            "packaged agent CPU on a clean bookworm root, 1 Hz (% of one core)",
            f"{pkg['cpu_pct_median']:.2f} (mean {pkg['cpu_pct_mean']:.2f})",
            "<= 1",
        ],
        [
            "packaged agent RSS on a clean bookworm root, 1 Hz (MiB)",
            f"{pkg['rss_mib_median']:.1f} (max {pkg['rss_mib_max']:.1f})",
            "<= 50",
        ],
    ]
    notes = (
        f" Package: `make agent-deb`, installed with dpkg -i (no network) on a fresh minimal "
        f"bookworm root (mmdebstrap, `python -m tests.support.cleanhost`); the agent ran as the "
        f"unit says (ExecStart with Debian's python3.11, user apm-agent, its Environment and "
        f"UMask) through chroot in its own PID/mount/UTS namespaces for {seconds:.0f}s after "
        "the same 5 s warm-up, pushing to the same kind of sink, StatsD off."
    )
    return rows, notes


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.agent")
    parser.add_argument("--deb", type=Path, help="the agent's .deb (make agent-deb)")
    parser.add_argument("--clean-root", type=Path, help="a clean root with --deb installed")
    args = parser.parse_args()
    host_s = float(os.environ.get("APM_AGENT_BENCH_SECONDS", "60"))
    statsd_s = float(os.environ.get("APM_AGENT_BENCH_STATSD_SECONDS", "5"))
    package_rows: list[list[str]] = []
    package_notes = ""
    if args.deb and args.clean_root:
        package_rows, package_notes = _package_rows(args.deb, args.clean_root, host_s)
        for row in package_rows:
            print(f"{row[0]}: {row[1]}")
    progress(f"statsd listener flood: 5 trials x {statsd_s:.0f}s")
    statsd = bench_statsd(statsd_s, 5)
    progress(f"agent with host collectors at 1 Hz for {host_s:.0f}s")
    host = bench_host(host_s)
    rows = [
        ["measure", "median", "target"],
        [
            "agent CPU, host collectors at 1 Hz (% of one core)",
            f"{host['cpu_pct_median']:.2f} (mean {host['cpu_pct_mean']:.2f})",
            "<= 1",
        ],
        [
            "agent RSS, host collectors at 1 Hz (MiB)",
            f"{host['rss_mib_median']:.1f} (max {host['rss_mib_max']:.1f})",
            "<= 50",
        ],
        [
            "StatsD packets handled per second of one core's CPU",
            f"{statsd['packets_per_cpu_s_median']:,.0f}",
            ">= 50,000",
        ],
        [
            "StatsD packets/s handled (wall clock)",
            f"{statsd['packets_per_s_median']:,.0f} "
            f"(listener at {statsd['listener_cpu_pct_median']:.0f}% of its core)",
            "",
        ],
        *package_rows,
    ]
    notes = (
        f"Host collectors: the real `apm agent run` (cpu, load, memory, disk, network, "
        f"system, agent; StatsD off) for {host_s:.0f}s after a 5 s warm-up, pushing every "
        "second to a local HTTP sink that answers 202; CPU medians over 10 s windows. "
        f"StatsD: a listener process pinned to core 0 flooded from core 1 with single-line "
        f"packets of every type (with tags and sample rates), median of 5 trials of "
        f"{statsd_s:.0f}s; packets the kernel dropped are not counted. When the listener's "
        "core is not saturated the Python sender is the limit, so the per-CPU-second "
        "figure (packets handled / listener CPU time) is the listener's capacity." + package_notes
    )
    print(write_section("agent", "Agent overhead", COMMAND, rows, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
