"""OTLP metrics onto the model, as the agent maps StatsD (agent/statsd/aggregate.py):

- server: the resource's ``host.name`` (``<host.name>.<service.instance.id>`` when it has
  both and ``otlp_server_with_instance`` is set), else ``service.instance.id``, else
  ``otlp_default_server``; metric: the instrument name (``/`` and other characters outside
  the rule made ``_``, dots kept) plus the resource's ``service.namespace`` and
  ``service.name`` and the chosen point attributes as name parts (apm.labels); the rate
  state is keyed by OpenTelemetry's identity of a stream (every resource attribute, the
  scope, the metric, the point's attributes: ingest.interop.otlp_identity);
- a gauge point, and a cumulative non-monotonic sum (an UpDownCounter: a level), is a sample
  of its value at its time;
- a cumulative monotonic sum (a counter) becomes its rate per second against the series'
  previous point (ingest.interop.rates); a delta sum is its value / its interval;
- a histogram (explicit or exponential) becomes ``<name>.count`` and ``<name>.sum`` per second
  (as sums: rates when cumulative, / interval when delta) and ``<name>.max`` (the max the
  point reports: of its interval when delta, since the series' start when cumulative); a
  summary becomes ``.count`` and ``.sum`` rates and its 1.0 quantile as ``.max``.

Samples that land on the same server, name and time (attributes left out of the name) are
summed when they are rates or counts, the larger kept for ``.max``, as the agent's StatsD
buckets do; two gauges there are a duplicate (the first kept).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

from apm.labels import Namer
from apm.model import metric_name_error
from ingest.errors import ApiError
from ingest.interop.otlp_identity import Labels, digest, point_metric, resource_of, text_of
from ingest.interop.points import Points, Tally
from ingest.interop.rates import Pending, RateState
from ingest.interop.settings import InteropSettings
from ingest.interop.tags import mapped_tags
from ingest.interop.wirecount import Deadline

__all__ = ["map_export"]

_DELTA, _CUMULATIVE = 1, 2
_NO_RECORDED_VALUE = 1


def _add(a: float, b: float) -> float:
    return a + b


class _Mapper:
    def __init__(
        self,
        settings: InteropSettings,
        names: Namer,
        rates: RateState,
        tally: Tally,
        deadline: Deadline | None,
        pending: Pending | None,
    ) -> None:
        self.deadline = deadline
        self.pending = pending
        self.settings = settings
        self.names = names
        self.rates = rates
        self.tally = tally
        self.points = Points(tally)

    def reject(self, reason: str, problem: str, n: int = 1) -> None:
        self.tally.count("rejected", reason, n, problem)

    def metric(self, server: str, stream: tuple[Hashable, ...], parts: Labels, metric: Any) -> None:
        """``stream``: the identity of the resource and scope; ``parts``: the resource's
        name parts."""
        if self.deadline is not None:
            self.deadline.check()
        kind = metric.WhichOneof("data")
        if kind is None:
            return
        data = getattr(metric, kind)
        for point in data.data_points:
            try:
                self.point(server, stream, parts, metric.name, kind, data, point)
            except _Refused as exc:
                self.reject(exc.reason, f"{metric.name[:80]!r}: {exc}")

    def point(
        self,
        server: str,
        stream: tuple[Hashable, ...],
        parts: Labels,
        name: str,
        kind: str,
        data: Any,
        point: Any,
    ) -> None:
        if point.flags & _NO_RECORDED_VALUE:
            self.tally.count("dropped", "no_recorded_value")
            return
        if len(point.attributes) > self.settings.otlp_max_attributes:
            raise _Refused(
                "too_many_attributes",
                f"{len(point.attributes)} attributes, more than otlp_max_attributes "
                f"({self.settings.otlp_max_attributes})",
            )
        if not point.time_unix_nano:
            raise _Refused("ts", "the point has no time_unix_nano")
        items: list[tuple[str, str]] = []
        for kv in point.attributes:
            text = text_of(kv.value)
            if text is None:
                self.tally.labels_dropped += 1
            else:
                items.append((kv.key, text))
        named = self.names.name(name, (*parts, *items))
        self.tally.labels_dropped += named.dropped
        if named.name is None:
            raise _Refused("metric_name", str(named.error))
        ts = point.time_unix_nano / 1e9
        # OpenTelemetry's identity of a stream: resource, scope, metric, point attributes;
        # kept as a digest, so that an attribute's long values cost the rate state nothing.
        key = digest((stream, name, kind, tuple(sorted(items))))
        temporality = getattr(data, "aggregation_temporality", _CUMULATIVE)  # gauges: none
        if kind == "gauge" or (
            kind == "sum" and not data.is_monotonic and temporality == _CUMULATIVE
        ):
            self.sample(server, ts, named.name, _number(point), None)
        elif kind == "sum":
            self.sums(server, ts, named.name, key, point, temporality, (_number(point),), "")
        else:
            self.histogram(server, ts, named.name, key, kind, point, temporality)

    def sums(
        self,
        server: str,
        ts: float,
        name: str,
        key: Hashable,
        point: Any,
        temporality: int,
        values: tuple[float, ...],
        suffixes: tuple[str, ...] | str,
    ) -> bool:
        """Per-second values of cumulative (rates) or delta (/ interval) sums; False when the
        point gave none (the first of a cumulative series, a reset)."""
        names = [name + s for s in suffixes] if isinstance(suffixes, tuple) else [name]
        if temporality == _DELTA:
            span = (point.time_unix_nano - point.start_time_unix_nano) / 1e9
            if not point.start_time_unix_nano or span <= 0:
                raise _Refused(
                    "interval", "a delta point needs start_time_unix_nano before its time"
                )
            rates = tuple(v / span for v in values)
        elif temporality == _CUMULATIVE:
            for value in values:  # a NaN kept as the previous point would poison the next
                if not math.isfinite(value):
                    raise _Refused("value", f"value {value} is not finite")
            step = self.rates.step(
                key,
                point.start_time_unix_nano,
                point.time_unix_nano,
                values,
                self.pending,
                point_metric(name),
            )
            if step.kind != "rate":
                self.tally.count("dropped", step.kind)
                return False
            rates = step.rates
        else:
            raise _Refused("temporality", "aggregation_temporality is unspecified")
        for i, (metric, rate) in enumerate(zip(names, rates, strict=True)):
            self.sample(server, ts, metric, rate, _add, new_point=i == 0)
        return True

    def histogram(
        self,
        server: str,
        ts: float,
        name: str,
        key: Hashable,
        kind: str,
        point: Any,
        temporality: int,
    ) -> None:
        top: float | None = None
        if kind == "summary":
            temporality = _CUMULATIVE
            top = next((q.value for q in point.quantile_values if q.quantile == 1.0), None)
        elif point.HasField("max"):
            top = point.max
        names = (name + ".count", name + ".sum", name + ".max")
        for metric in names:
            if metric_name_error(metric):
                raise _Refused("metric_name", f"{metric[:80]!r} is over the name length")
        # A histogram may carry no sum (optional since OTLP 0.11: negative observations): then
        # no .sum, rather than a made-up 0.
        has_sum = kind == "summary" or point.HasField("sum")
        values = (float(point.count), point.sum) if has_sum else (float(point.count),)
        for value in (*values, top or 0.0):  # checked before the rate state moves
            if not math.isfinite(value):
                raise _Refused("value", f"{value} is not finite")
        suffixes = (".count", ".sum") if has_sum else (".count",)
        given = self.sums(server, ts, name, key, point, temporality, values, suffixes)
        if top is not None and point.count:
            self.sample(server, ts, names[2], top, max, new_point=not given)

    def sample(
        self,
        server: str,
        ts: float,
        metric: str,
        value: float,
        merge: Callable[[float, float], float] | None,
        new_point: bool = True,
    ) -> None:
        if not math.isfinite(value):
            raise _Refused("value", f"value {value} is not finite")
        self.points.add(server, ts, metric, value, merge, new_point)


class _Refused(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _number(point: Any) -> float:
    kind = point.WhichOneof("value")
    if kind == "as_double":
        return float(point.as_double)
    if kind == "as_int":
        return float(point.as_int)
    raise _Refused("value", "the point has no value")


def map_export(
    request: Any,
    settings: InteropSettings,
    names: Namer,
    rates: RateState,
    tally: Tally,
    deadline: Deadline | None = None,
    pending: Pending | None = None,
) -> Points:
    """The samples of an ExportMetricsServiceRequest; a request with more than
    ``otlp_max_points`` data points is a 413, a bad point costs only itself. With ``pending``
    the rate state's steps are kept there, for ``rates.commit`` after the publish."""
    total = sum(
        len(getattr(m, m.WhichOneof("data")).data_points)
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.WhichOneof("data")
    )
    if total > settings.otlp_max_points:
        raise ApiError(
            413,
            "too_large",
            f"the request holds {total} data points, more than otlp_max_points "
            f"({settings.otlp_max_points})",
            at="body",
            reason="too_large",
        )
    mapper = _Mapper(settings, names, rates, tally, deadline, pending)
    for rm in request.resource_metrics:
        resource = resource_of(
            rm.resource, settings.otlp_default_server, settings.otlp_server_with_instance
        )
        if resource.server is None:
            n = sum(
                len(getattr(m, m.WhichOneof("data")).data_points)
                for sm in rm.scope_metrics
                for m in sm.metrics
                if m.WhichOneof("data")
            )
            why = f"the resource's {resource.source} makes no valid server name"
            mapper.reject("server_name", why, n)
            continue
        if settings.otlp_resource_tags:
            tags, refused = mapped_tags(dict(resource.key), settings.otlp_resource_tags)
            mapper.tally.labels_dropped += refused
            mapper.points.tags.add(resource.server, tags)
        for sm in rm.scope_metrics:
            stream = (resource.key, sm.scope.name, sm.scope.version)
            for metric in sm.metrics:
                mapper.metric(resource.server, stream, resource.parts, metric)
    mapper.tally.labels_dropped += mapper.points.tags.dropped
    return mapper.points
