"""Samples mapped from a foreign protocol, grouped into snapshots (one per server and
timestamp) and handed to the ingest's own validator, so that OTLP and remote_write samples
are checked, encoded and published exactly as the JSON contract's are.

:class:`Tally` counts what became of every point (accepted, dropped: not a sample by the
protocol's own rules, rejected: refused), by reason, for the answer and for /metrics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ingest.errors import ApiError
from ingest.intake import Decoded
from ingest.interop.tags import RequestTags
from ingest.records import to_records
from ingest.validate import Batch, Validator

__all__ = ["Points", "Tally", "bad_request", "to_decoded"]


def bad_request(detail: str, reason: str, at: str = "body") -> ApiError:
    """Data the sender must drop, not retry (both protocols' 400)."""
    return ApiError(400, "bad_request", detail, at=at, reason=reason)


class Tally:
    """What became of the points of one request: ``(outcome, reason) -> points``."""

    def __init__(self) -> None:
        self.points: Counter[tuple[str, str]] = Counter()
        self.labels_dropped = 0
        self.first_problem = ""

    def count(self, outcome: str, reason: str, n: int = 1, problem: str = "") -> None:
        self.points[outcome, reason] += n
        if problem and outcome == "rejected" and not self.first_problem:
            self.first_problem = problem

    def of(self, outcome: str) -> int:
        return sum(n for (o, _r), n in self.points.items() if o == outcome)

    def reasons(self, outcome: str) -> dict[str, int]:
        return {r: n for (o, r), n in sorted(self.points.items()) if o == outcome}


class Points:
    """Samples by (server, ts) -> {metric: value}: the snapshots the validator reads, and how
    many of the protocol's points each holds (an OTLP histogram point makes up to three
    samples), and the servers' tags (ingest.interop.tags). A second sample of the same
    server, metric and ts is combined by ``merge`` (None: kept out and counted as rejected,
    ``duplicate``)."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.snapshots: dict[tuple[str, float], dict[str, float]] = {}
        self.points: Counter[tuple[str, float]] = Counter()
        self.samples = 0
        self.tags = RequestTags()

    def add(
        self,
        server: str,
        ts: float,
        metric: str,
        value: float,
        merge: Callable[[float, float], float] | None = None,
        new_point: bool = True,
    ) -> bool:
        """False when the sample was a duplicate and kept out."""
        key = (server, ts)
        metrics = self.snapshots.setdefault(key, {})
        if metric in metrics:
            if merge is None:
                if new_point:
                    self.tally.count(
                        "rejected",
                        "duplicate",
                        problem=f"two series map to {metric!r} on {server!r} at ts {ts!r}",
                    )
                return False
            metrics[metric] = merge(metrics[metric], value)
        else:
            metrics[metric] = value
            self.samples += 1
        if new_point:
            self.points[key] += 1
        return True


def to_decoded(points: Points, validator: Validator, record_max_bytes: int, source: str) -> Decoded:
    """Validates the snapshots with the ingest's validator; the points of the snapshots it
    refuses count as ``rejected`` by its reason, the others as ``accepted``. No samples: an
    empty batch, nothing to publish. A batch the validator refuses whole is a 400 (never
    worth a retry). The servers' tags go with their snapshots, said by ``source`` (the
    protocol: ingest.tags lets an agent's tags win over it)."""
    total = sum(points.points.values())
    if not points.samples:
        return Batch(0, 0, {}), {}
    items = list(points.snapshots.items())
    snapshots: list[dict[str, object]] = []
    for (server, ts), metrics in items:
        snapshot: dict[str, object] = {"server": server, "ts": ts, "metrics": metrics}
        if tags := points.tags.of(server):
            snapshot["tags"] = tags
        snapshots.append(snapshot)
    doc = {"snapshots": snapshots}
    try:
        # Every bad snapshot is counted and reported, however many: the good ones are kept.
        batch = validator.validate(doc, max_rejected=len(items))
    except ApiError as exc:
        if exc.status != 422:
            raise
        points.tally.count("rejected", exc.reason, total, exc.detail)
        raise bad_request(exc.detail, exc.reason, at="body") from None
    refused = 0
    for rejection in batch.rejected:
        n = points.points[items[rejection.index][0]]
        refused += n
        points.tally.count("rejected", rejection.reason, n, rejection.detail)
    points.tally.count("accepted", "ok", total - refused)
    batch.tags_from = source
    return batch, to_records(batch.by_metric, record_max_bytes)
