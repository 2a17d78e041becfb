"""Fast validation of a decoded JSON batch with the shared naming rules of apm.model (and the
tag rule of apm.tags: a bad tag refuses its snapshot, as a bad metric name does).

The batch is checked whole before anything is published; each bad snapshot is left out and
reported by index with its first bad field in ``at``. The hot loop touches each sample once,
with no per-sample objects beyond the line the encoder needs; names seen before are looked
up in a set instead of matched again.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from apm.model import metric_name_error, server_name_error, value_error
from apm.tags import tags_error
from ingest.errors import ApiError
from ingest.namecache import NameCache

__all__ = ["Batch", "Line", "Rejection", "Tagged", "Validator", "count_samples"]

# One sample as its apm.wire line, ``server<TAB>ts<TAB>value``, formatted exactly as
# apm.wire.encode_chunks would (repr of the float). Building the line here, with the
# server/ts prefix made once per snapshot, halves the per-sample cost of encoding.
Line = str
_SNAPSHOT_KEYS = frozenset(("server", "ts", "metrics"))
_TAGGED_KEYS = frozenset(("server", "ts", "metrics", "tags"))
# A server's tags as a batch says them: (ts of the snapshot, tags).
Tagged = tuple[float, dict[str, str]]


@dataclass
class Rejection:
    """A snapshot left out of an accepted batch: its index and the first thing wrong."""

    index: int
    reason: str  # the /metrics label
    detail: str
    at: str
    samples: int

    def body(self) -> dict[str, object]:
        return {"index": self.index, "error": "validation", "detail": self.detail, "at": self.at}


@dataclass
class Batch:
    """The valid snapshots of a batch, grouped by metric: what the publisher turns into
    records; ``rejected`` lists the snapshots left out, by index."""

    snapshots: int
    samples: int
    by_metric: dict[str, list[Line]]
    rejected: list[Rejection] = field(default_factory=list)
    # Each server's tags, from its latest valid snapshot that carries ``tags`` (ingest.tags),
    # and who said them: "agent" (the JSON contract) or the protocol that mapped them.
    tags: dict[str, Tagged] = field(default_factory=dict)
    tags_from: str = "agent"

    @property
    def rejected_samples(self) -> int:
        return sum(r.samples for r in self.rejected)


def _reject(reason: str, detail: str, at: str) -> ApiError:
    return ApiError(422, "validation", detail, at=at, reason=reason)


def count_samples(doc: object) -> int:
    """How many samples a (possibly invalid) batch carries, for the rejection counters."""
    snaps = doc.get("snapshots") if isinstance(doc, dict) else None
    if not isinstance(snaps, list):
        return 0
    return sum(
        len(s["metrics"])
        for s in snaps
        if isinstance(s, dict) and isinstance(s.get("metrics"), dict)
    )


class Validator:
    """Validates batches; keeps bounded caches of names that already passed the rules.

    The verdict is per snapshot: a bad snapshot (name, ts, value, shape) is left out and
    reported by index, the others are accepted, so one host's skewed clock does not cost the
    batch. What concerns the batch as a whole (its shape, emptiness, ``max_samples``), a batch
    whose every snapshot is bad and one with more than ``max_rejected`` bad snapshots are
    refused whole (422).
    """

    def __init__(
        self,
        max_samples: int,
        max_future_s: float,
        max_age_s: float,
        clock: Callable[[], float] = time.time,
        cache_max_bytes: int = 8 * 1024 * 1024,
        max_rejected: int = 1000,
    ) -> None:
        self.max_samples = max_samples
        self.max_rejected = max_rejected
        self.max_future_s = max_future_s
        self.max_age_s = max_age_s
        self.clock = clock
        # Each cache holds at most cache_max_bytes (ingest.namecache); /metrics shows both.
        self.servers = NameCache(cache_max_bytes)
        self.metrics = NameCache(cache_max_bytes)

    def _known(
        self,
        cache: NameCache,
        name: object,
        check: Callable[[object], str | None],
        at: str,
        reason: str,
    ) -> None:
        problem = check(name)
        if problem:
            raise _reject(reason, problem, at)
        cache.add(name)  # type: ignore[arg-type]  # check() proved it is a str

    def validate(self, doc: object, max_rejected: int | None = None) -> Batch:
        """The batch's verdict; ``max_rejected`` overrides the validator's bound on bad
        snapshots (the foreign protocols' snapshots are built by the ingest itself, so their
        bad ones are cheap and bounded by ``max_samples``: they pass the number of snapshots,
        and keep every good sample whatever the number of bad ones)."""
        limit = self.max_rejected if max_rejected is None else max_rejected
        if not isinstance(doc, dict):
            raise _reject("shape", "the body must be a JSON object with a 'snapshots' list", "")
        extra = sorted(set(doc) - {"snapshots"})
        if extra:
            raise _reject("shape", f"unknown field {extra[0]!r}", extra[0])
        snaps = doc.get("snapshots")
        if not isinstance(snaps, list):
            raise _reject("shape", "'snapshots' must be a list of snapshots", "snapshots")
        if not snaps:
            raise _reject("empty", "the batch is empty: 'snapshots' holds no snapshot", "snapshots")
        now = self.clock()
        by_metric: dict[str, list[Line]] = {}
        batch = Batch(0, 0, by_metric)
        total = 0  # samples of every snapshot, good or bad: max_samples bounds the request
        for i, snap in enumerate(snaps):
            size = len(snap["metrics"]) if _has_metrics(snap) else 0
            total += size
            if total > self.max_samples:
                raise _reject(
                    "too_many_samples",
                    f"the batch holds more than {self.max_samples} samples",
                    f"snapshots[{i}].metrics",
                )
            try:
                self._snapshot(i, snap, now, by_metric, batch.tags)
            except ApiError as exc:
                batch.rejected.append(Rejection(i, exc.reason, exc.detail, exc.at or "", size))
                if len(batch.rejected) > limit:
                    # Bad snapshots are the slow path (~4 us each): a body of half a million
                    # `{}` would cost seconds and 200 MB of verdicts. That many is a client
                    # bug, not skew: refuse the batch, naming the first.
                    first = batch.rejected[0]
                    raise _reject(
                        "too_many_bad_snapshots",
                        f"more than {limit} bad snapshots; the first: {first.detail}",
                        first.at,
                    ) from None
                continue
            batch.snapshots += 1
            batch.samples += size
        if batch.samples == 0:
            if batch.rejected:
                first = batch.rejected[0]
                more = len(batch.rejected) - 1
                detail = first.detail + (f" (and {more} more bad snapshots)" if more else "")
                raise _reject(first.reason, detail, first.at)
            raise _reject("empty", "the batch is empty: no snapshot holds a metric", "snapshots")
        return batch

    def _snapshot(
        self,
        i: int,
        snap: object,
        now: float,
        by_metric: dict[str, list[Line]],
        tagged: dict[str, Tagged],
    ) -> None:
        """Checks snapshot ``i`` and adds its lines to ``by_metric`` (its tags to ``tagged``);
        on a bad sample or tag, takes back the lines it added and raises (the snapshot is the
        unit of the verdict)."""
        if type(snap) is not dict:
            raise _reject(
                "shape", "a snapshot must be an object with server, ts, metrics", f"snapshots[{i}]"
            )
        tags = None
        if len(snap) != 3 or snap.keys() != _SNAPSHOT_KEYS:
            if len(snap) != 4 or snap.keys() != _TAGGED_KEYS:
                _shape_error(snap, i)
            tags = snap["tags"]
            if (bad_tag := tags_error(tags)) is not None:
                key, why = bad_tag
                at = f"snapshots[{i}].tags" + (f"[{json.dumps(key)}]" if key else "")
                raise _reject("tag", why, at)
        server = snap["server"]
        servers, metrics = self.servers, self.metrics
        if type(server) is not str or server not in servers:  # dicts are unhashable
            self._known(servers, server, server_name_error, f"snapshots[{i}].server", "server_name")
        ts = snap["ts"]
        if type(ts) is not float:
            if type(ts) is not int:
                raise _reject(
                    "ts",
                    f"ts must be epoch seconds (a number), got {type(ts).__name__}",
                    f"snapshots[{i}].ts",
                )
            ts = float(ts)
        if not now - self.max_age_s <= ts <= now + self.max_future_s:  # also false for NaN
            reason, problem = _ts_problem(ts, now, self.max_future_s, self.max_age_s)
            raise _reject(reason, problem, f"snapshots[{i}].ts")
        values = snap["metrics"]
        if type(values) is not dict:
            raise _reject(
                "shape",
                "metrics must be an object of metric name -> number",
                f"snapshots[{i}].metrics",
            )
        prefix = f"{server}\t{ts!r}\t"
        added = 0
        try:
            for name, value in values.items():
                kind = type(value)
                # x - x is 0.0 for every finite float and NaN for inf and NaN.
                if kind is float and value - value == 0.0:
                    line = prefix + repr(value)
                elif kind is int:
                    line = prefix + repr(float(value))
                else:
                    _value_problem(value, i, name)
                rows = by_metric.get(name)
                if rows is None:
                    if name not in metrics:
                        self._known(
                            metrics, name, metric_name_error, _metric_at(i, name), "metric_name"
                        )
                    rows = by_metric[name] = []
                rows.append(line)
                added += 1
        except ApiError:
            _take_back(by_metric, values, added)
            raise
        if tags is not None:
            seen = tagged.get(server)
            if seen is None or seen[0] <= ts:
                tagged[server] = (ts, tags)


def _has_metrics(snap: object) -> bool:
    return type(snap) is dict and type(snap.get("metrics")) is dict


def _take_back(by_metric: dict[str, list[Line]], values: dict, added: int) -> None:
    """Removes the lines of the first ``added`` metrics of a snapshot (one line each)."""
    for name, _ in zip(values, range(added), strict=False):
        rows = by_metric[name]
        rows.pop()
        if not rows:
            del by_metric[name]


def _metric_at(i: int, name: str) -> str:
    return f"snapshots[{i}].metrics[{json.dumps(name)}]"


def _shape_error(snap: dict, i: int) -> None:
    for key in ("server", "ts", "metrics"):
        if key not in snap:
            raise _reject("shape", f"a snapshot needs {key!r}", f"snapshots[{i}].{key}")
    extra = sorted(set(snap) - _TAGGED_KEYS)[0]
    raise _reject("shape", f"unknown field {extra!r} in a snapshot", f"snapshots[{i}].{extra}")


def _value_problem(value: object, i: int, name: str) -> None:
    problem = value_error(value)
    if problem is None and isinstance(value, int):  # an int too big for a double
        try:
            float(value)
            return
        except OverflowError:
            problem = "value is too large for a double"
    if problem is None:
        return
    raise _reject("value", problem, _metric_at(i, name))


def _ts_problem(ts: float, now: float, max_future_s: float, max_age_s: float) -> tuple[str, str]:
    """The /metrics reason and the message: clock skew (ahead) and backlogs past the
    retention (old) are told apart, as both are visible operator problems."""
    if not math.isfinite(ts):
        return "ts", f"ts must be finite, got {ts}"
    if ts > now:
        return (
            "ts_ahead",
            f"ts {ts!r} is more than {max_future_s:g}s ahead of the server clock ({now:.0f})",
        )
    return (
        "ts_old",
        f"ts {ts!r} is older than the retention of {max_age_s:g}s (server clock {now:.0f})",
    )
