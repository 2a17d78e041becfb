"""``make bench-ingest``, second part: what bounding a protobuf body costs, and what hostile
bodies and a flood of series cost the ingest (issue 28, findings 4 and 5).

1. Decode of a legitimate large body (OTLP: 10,000 points x 3 attributes, ~900 KB;
   remote_write: 10,000 series x 4 labels), counted on the wire before the parse (what every
   body paid before ``protobuf_parse_first_max_bytes``) against parsed first and counted
   after, interleaved in one process, median of 7; upb's bare parse for scale.
2. The issue's hostile bodies: answer and time, and this process's peak RSS growth.
3. The OTLP flood (20 requests of ~190 KB gzip, a new 1 KB ``request_id`` per point, plus a
   steady counter) against a real ``apm ingest`` process on the running Kafka: its peak RSS
   growth after the first request, and the steady counter's rates kept.
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from bench.base import progress, write_section
from ingest.auth import add_key
from ingest.errors import ApiError
from ingest.interop.otlp import PROTOBUF, decode_export
from ingest.interop.prompb import WriteRequest
from ingest.interop.remote_write import decode_write
from ingest.interop.settings import InteropSettings
from ingest.interop.wirecount import Deadline
from ingest.settings import IngestSettings
from launch import processes
from launch.probe import free_port

__all__ = ["flood_body", "main"]

COMMAND = "make bench-ingest"
NS = 1_000_000_000
MIB = 1024 * 1024
CUMULATIVE = 2


def _ld(field: int, payload: bytes = b"") -> bytes:
    out, n = bytearray([field << 3 | 2]), len(payload)
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n]) + payload


def _otlp_body(points: int) -> bytes:
    request = ExportMetricsServiceRequest()
    rm = request.resource_metrics.add()
    kv = rm.resource.attributes.add()
    kv.key, kv.value.string_value = "host.name", "web-1"
    metric = rm.scope_metrics.add().metrics.add(name="http.server.duration")
    t = time.time_ns()
    for i in range(points):
        point = metric.gauge.data_points.add(as_double=i * 0.25, time_unix_nano=t)
        for key, value in (("route", f"/api/{i % 50}"), ("method", "GET"), ("code", "200")):
            attr = point.attributes.add()
            attr.key, attr.value.string_value = key, value
    return request.SerializeToString()


def _write_body(series: int) -> bytes:
    request = WriteRequest()
    t = int(time.time() * 1000)
    for i in range(series):
        ts = request.timeseries.add()
        for name, value in (
            ("__name__", "up"),
            ("instance", f"web-{i}"),
            ("job", "node"),
            ("dc", "a"),
        ):
            label = ts.labels.add()
            label.name, label.value = name, value
        ts.samples.add(value=1.0, timestamp=t)
    return request.SerializeToString()


def _decoders(s: InteropSettings, ingest: IngestSettings) -> dict[str, Callable[[bytes, int], Any]]:
    otlp_limits = dict.fromkeys(
        ("resource_metrics", "scope_metrics", "metrics", "points"),
        (s.otlp_max_points, "otlp_max_points"),
    )
    rw_limits = {
        "timeseries": (s.remote_write_max_series, "remote_write_max_series"),
        "samples": (ingest.max_samples, "max_samples"),
    }
    total = (s.protobuf_max_elements, "protobuf_max_elements")

    def otlp(raw: bytes, gate: int) -> Any:
        deadline = Deadline(4.0, 1)
        return decode_export(
            raw,
            PROTOBUF,
            False,
            ingest.max_decompressed_bytes,
            0,
            otlp_limits,
            total,
            deadline,
            gate,
        )

    def write(raw: bytes, gate: int) -> Any:
        deadline = Deadline(4.0, 1)
        return decode_write(raw, ingest.max_decompressed_bytes, rw_limits, total, deadline, gate)

    return {"otlp": otlp, "remote_write": write}


def _ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _hwm_kib(pid: str = "self") -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1))  # type: ignore[union-attr]


def _reset_hwm(pid: str = "self") -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _decode_rows(repeats: int) -> list[list[str]]:
    import cramjam

    s, ingest = InteropSettings(), IngestSettings()
    decoders = _decoders(s, ingest)
    gate = s.protobuf_parse_first_max_bytes
    bodies = {
        "otlp": (_otlp_body(10_000), ExportMetricsServiceRequest.FromString),
        "remote_write": (_write_body(10_000), WriteRequest.FromString),
    }
    rows = []
    for name, (raw, parse) in bodies.items():
        wire_body = raw if name == "otlp" else bytes(cramjam.snappy.compress_raw(raw))
        before, after, bare = [], [], []
        decode = decoders[name]
        for _ in range(repeats):
            before.append(_ms(partial(decode, wire_body, 0)))
            after.append(_ms(partial(decode, wire_body, gate)))
            bare.append(_ms(partial(parse, raw)))
        b, a, p = (statistics.median(x) for x in (before, after, bare))
        size = f"{name} {len(raw) // 1024} KiB"
        progress(f"{size}: counted first {b:.1f} ms, parsed first {a:.1f} ms, parse {p:.1f} ms")
        rows.append(
            [
                f"decode, {size} legitimate body: counted on the wire first -> parsed first "
                "(parse alone)",
                f"{b:.1f} -> {a:.1f} ms ({p:.1f} ms)",
            ]
        )

    hostile = {
        "otlp: 3,000,000 empty resource_metrics (gzip)": (
            "otlp",
            gzip.compress(_ld(1) * 3_000_000, 9),
        ),
        "remote_write: 7,000,000 empty series (snappy)": (
            "remote_write",
            bytes(cramjam.snappy.compress_raw(_ld(1) * 7_000_000)),
        ),
    }
    for label, (name, body) in hostile.items():
        _reset_hwm()
        before_kib = _hwm_kib()
        started = time.perf_counter()
        try:
            if name == "otlp":
                decode_export(
                    gzip.decompress(body),
                    PROTOBUF,
                    False,
                    ingest.max_decompressed_bytes,
                    0,
                    {"resource_metrics": (s.otlp_max_points, "otlp_max_points")},
                    (s.protobuf_max_elements, "x"),
                    Deadline(4.0, 1),
                    gate,
                )
            else:
                decoders[name](body, gate)
            answer = "accepted"
        except ApiError as exc:
            answer = str(exc.status)
        seconds = time.perf_counter() - started
        grown = (_hwm_kib() - before_kib) / 1024
        progress(f"{label}: {answer} in {seconds:.2f} s, peak RSS +{grown:.0f} MiB")
        rows.append(
            [
                f"hostile body, {label}, {len(body) // 1024} KiB",
                f"{answer} in {seconds:.2f} s, peak RSS +{grown:.0f} MiB",
            ]
        )
    return rows


def flood_body(i: int, t0: int, host: str = "bench-flood", prefix: str = "bench.") -> bytes:
    """Request ``i`` of the flood: ~8 MB of points (~180 KB gzip) of the counter
    ``<prefix>flood``, one new series per point (a new 1 KB ``request_id``), and one point of
    the counter ``<prefix>steady``, all cumulative from ``t0`` (ns). Shared with
    tests/ingest/interop/test_otlp_flood.py."""
    rng = random.Random(i)
    request = ExportMetricsServiceRequest()
    rm = request.resource_metrics.add()
    kv = rm.resource.attributes.add()
    kv.key, kv.value.string_value = "host.name", host
    sm = rm.scope_metrics.add()
    flood = sm.metrics.add(name=f"{prefix}flood")
    flood.sum.aggregation_temporality, flood.sum.is_monotonic = CUMULATIVE, True
    for _ in range(8_000):
        point = flood.sum.data_points.add(
            as_double=1.0, start_time_unix_nano=t0 - NS, time_unix_nano=t0 + i * NS
        )
        attr = point.attributes.add()
        attr.key, attr.value.string_value = (
            "request_id",
            "r" * 1000 + f"{rng.getrandbits(128):032x}",
        )
    steady = sm.metrics.add(name=f"{prefix}steady")
    steady.sum.aggregation_temporality, steady.sum.is_monotonic = CUMULATIVE, True
    steady.sum.data_points.add(
        as_double=5.0 * i, start_time_unix_nano=t0 - NS, time_unix_nano=t0 + i * NS
    )
    return gzip.compress(request.SerializeToString(), 6)


def _flood_rows() -> list[list[str]]:
    bootstrap = IngestSettings().kafka_bootstrap
    t0 = time.time_ns() - 60 * NS
    bodies = [flood_body(i, t0) for i in range(20)]
    with tempfile.TemporaryDirectory(prefix="apm-bench-flood-") as tmp:
        home = Path(tmp)
        key = add_key(home / "keys", "bench")
        port = free_port()
        progress(f"flood: starting apm ingest on :{port} (Kafka {bootstrap})")
        proc = processes.ingest(port, home / "keys", bootstrap).start(home)
        pid = str(proc.pid())
        url = processes.ingest_url(port)
        headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/x-protobuf",
            "Content-Encoding": "gzip",
        }
        try:
            with httpx.Client(timeout=30) as client:
                first = client.post(f"{url}/otlp/v1/metrics", content=bodies[0], headers=headers)
                _reset_hwm(pid)
                before = _hwm_kib(pid)
                statuses = [
                    client.post(f"{url}/otlp/v1/metrics", content=b, headers=headers).status_code
                    for b in bodies[1:]
                ]
                grown = (_hwm_kib(pid) - before) / 1024
                metrics = client.get(f"{url}/metrics").text
        finally:
            proc.stop(30)
    found = re.search(
        r'apm_ingest_interop_points_total\{outcome="accepted",protocol="otlp",reason="ok"\} (\S+)',
        metrics,
    )
    kept = float(found.group(1)) if found else 0.0
    progress(
        f"flood: first {first.status_code}, then {sorted(set(statuses))}, "
        f"peak RSS +{grown:.0f} MiB, rates kept {kept:.0f}"
    )
    return [
        [
            f"OTLP flood: 19 requests of ~{len(bodies[1]) // 1024} KiB gzip after the first, "
            "peak RSS growth of the ingest",
            f"+{grown:.0f} MiB (bound: 32 MiB)",
        ],
        [
            "OTLP flood: the steady counter's rates kept (of 19)",
            f"{kept:.0f}",
        ],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-doc", action="store_true", help="do not write BENCHMARKS.md")
    args = parser.parse_args(argv)
    load = Path("/proc/loadavg").read_text().split()[0]
    rows = [["figure", "value"], *_decode_rows(args.repeats), *_flood_rows()]
    notes = (
        f"Decode figures: medians of {args.repeats}, the two paths interleaved in one process "
        f"(load average {load} at the start). The hostile bodies' and the flood's peak RSS is "
        "the kernel's high-water mark (VmHWM) reset through /proc/<pid>/clear_refs first. "
        "The memory bounds are asserted by tests/ingest/interop/test_wirecount.py and "
        "test_otlp_flood.py, the CPU deadline there on a clock the test moves; the times "
        "are this table's, never asserted."
    )
    for row in rows[1:]:
        print(f"{row[0]:<100} {row[1]}")
    if not args.no_doc:
        write_section("ingest-decode", "Ingest: protobuf bounds and floods", COMMAND, rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
