"""Prometheus remote_write 1.0 onto the model: a snappy block-compressed ``WriteRequest``;
each series' ``__name__`` plus the chosen labels (apm.labels) is the metric, its ``instance``
label (a setting) the server, each sample a sample at its own millisecond timestamp.

NaN and Prometheus' stale markers (the NaN ``0x7ff0000000000002`` written when a series
disappears) are not samples: dropped and counted. Everything here runs on a parse thread.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping

import cramjam
from google.protobuf.message import DecodeError

from apm.labels import Namer, server_from_label
from ingest.errors import ApiError
from ingest.intake import Decoded
from ingest.interop.parsedcount import REMOTE_WRITE_LEVELS, parse_bounded
from ingest.interop.points import Points, Tally, bad_request, to_decoded
from ingest.interop.prompb import WriteRequest
from ingest.interop.settings import InteropSettings
from ingest.interop.tags import mapped_tags
from ingest.interop.wirecount import REMOTE_WRITE, Deadline
from ingest.validate import Validator

__all__ = ["STALE_NAN", "check_headers", "decode_write", "map_write", "remote_write_decoder"]

STALE_NAN = 0x7FF0000000000002  # Prometheus' value.StaleNaN
_BITS = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")


def _unsupported(detail: str, at: str, reason: str) -> ApiError:
    return ApiError(415, "unsupported_media_type", detail, at=at, reason=reason)


def check_headers(content_type: str | None, content_encoding: str | None) -> None:
    """remote_write 1.0: ``application/x-protobuf`` (``proto=prometheus.WriteRequest`` if
    named) and ``Content-Encoding: snappy``; anything else is a 415 (remote_write 2.0's
    ``io.prometheus.write.v2.Request`` included, which a 2.0 sender takes as "not
    supported")."""
    media, _, params = (content_type or "").partition(";")
    if media.strip().lower() != "application/x-protobuf":
        raise _unsupported(
            f"Content-Type must be application/x-protobuf, got {content_type!r}",
            "header:Content-Type",
            "media_type",
        )
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "proto" and value.strip() != "prometheus.WriteRequest":
            raise _unsupported(
                f"only remote_write 1.0 (proto=prometheus.WriteRequest) is accepted, got "
                f"{value.strip()!r}",
                "header:Content-Type",
                "media_type",
            )
    if (content_encoding or "").strip().lower() != "snappy":
        raise _unsupported(
            f"Content-Encoding must be snappy, got {content_encoding!r}",
            "header:Content-Encoding",
            "encoding",
        )


def decode_write(
    raw: bytes,
    max_inflated: int,
    limits: Mapping[str, tuple[int, str]],
    max_elements: tuple[int, str],
    deadline: Deadline,
    parse_first_max_bytes: int = 0,
) -> object:
    """Snappy (block format) then protobuf. The inflated length is read from the block's
    header and checked before anything is inflated (413); the elements of each kind
    (``limits``: timeseries, samples) and in all (``max_elements``) are counted (413), before
    the parse when the inflated body is over ``parse_first_max_bytes``, after it otherwise
    (ingest.interop.parsedcount); bad bytes are a 400; 503 past ``deadline``."""
    try:
        size = cramjam.snappy.decompress_raw_len(raw)
    except cramjam.DecompressionError as exc:
        raise bad_request(f"the body is not snappy (block format): {exc}", "malformed") from None
    if size > max_inflated:
        raise ApiError(
            413,
            "too_large",
            f"the decompressed body ({size} bytes) exceeds the limit of {max_inflated} bytes",
            at="body",
            reason="too_large",
        )
    try:
        inflated = bytes(cramjam.snappy.decompress_raw(raw))
    except cramjam.DecompressionError as exc:
        raise bad_request(f"the body is not snappy (block format): {exc}", "malformed") from None
    return parse_bounded(
        inflated,
        _parse_write,
        REMOTE_WRITE,
        REMOTE_WRITE_LEVELS,
        limits,
        max_elements,
        deadline,
        parse_first_max_bytes,
    )


def _parse_write(inflated: bytes) -> object:
    try:
        return WriteRequest.FromString(inflated)
    except (DecodeError, ValueError, RecursionError) as exc:
        raise bad_request(f"the body is not a protobuf WriteRequest: {exc}", "malformed") from None


def _too_large(detail: str) -> ApiError:
    return ApiError(413, "too_large", detail, at="body", reason="too_large")


def map_write(
    request: object,
    settings: InteropSettings,
    names: Namer,
    max_samples: int,
    tally: Tally,
    deadline: Deadline | None = None,
) -> Points:
    """The samples of a WriteRequest. A request past the series or samples limit is a 413, a
    series with more labels than ``remote_write_max_labels`` a 400 (the whole request: it
    would never succeed); a bad name, server or value costs only its own series or sample."""
    series_list = request.timeseries  # type: ignore[attr-defined]
    if len(series_list) > settings.remote_write_max_series:
        raise _too_large(
            f"the request holds {len(series_list)} series, more than "
            f"remote_write_max_series ({settings.remote_write_max_series})"
        )
    total = sum(len(s.samples) for s in series_list)
    if total > max_samples:
        raise _too_large(
            f"the request holds {total} samples, more than max_samples ({max_samples})"
        )
    points = Points(tally)
    server_label = settings.remote_write_server_label
    default_server = settings.remote_write_default_server
    tag_labels = settings.remote_write_tag_labels
    for index, series in enumerate(series_list):
        if deadline is not None and not index % 1024:
            deadline.check()
        if len(series.labels) > settings.remote_write_max_labels:
            raise bad_request(
                f"series {index} has {len(series.labels)} labels, more than "
                f"remote_write_max_labels ({settings.remote_write_max_labels})",
                "too_many_labels",
                at=f"timeseries[{index}].labels",
            )
        if series.histograms:
            tally.count("dropped", "native_histogram", len(series.histograms))
        samples = series.samples
        if not samples:
            continue
        name, server_raw, others = "", "", []
        for label in series.labels:
            if label.name == "__name__":
                name = label.value
            elif label.name == server_label:
                server_raw = label.value
            else:
                others.append((label.name, label.value))
        server = server_from_label(server_raw) if server_raw else default_server
        if server is None:
            tally.count(
                "rejected",
                "server_name",
                len(samples),
                f"series {index}: {server_label}={server_raw[:60]!r} makes no valid server name",
            )
            continue
        named = names.name(name, tuple(others)) if name else None
        if named is not None:
            tally.labels_dropped += named.dropped
        if named is None or named.name is None:
            why = named.error if named is not None else "the series has no __name__"
            tally.count("rejected", "metric_name", len(samples), f"series {index}: {why}")
            continue
        _add_samples(points, server, named.name, samples, tally)
        if tag_labels:
            tags, refused = mapped_tags(dict(others), tag_labels)
            tally.labels_dropped += refused
            points.tags.add(server, tags)
    tally.labels_dropped += points.tags.dropped
    return points


def _add_samples(points: Points, server: str, metric: str, samples: object, tally: Tally) -> None:
    for sample in samples:  # type: ignore[attr-defined]
        value = sample.value
        if value - value != 0.0:  # NaN or an infinity
            if math.isnan(value):
                bits = _BITS.unpack(_DOUBLE.pack(value))[0]
                tally.count("dropped", "stale" if bits == STALE_NAN else "nan")
            else:
                tally.count("rejected", "value", problem=f"{metric}: value {value} is not finite")
            continue
        points.add(server, sample.timestamp / 1000.0, metric, value)


def remote_write_decoder(
    validator: Validator,
    settings: InteropSettings,
    names: Namer,
    max_inflated: int,
    max_samples: int,
    record_max_bytes: int,
    tally: Tally,
    deadline: Deadline,
) -> Callable[[bytes], Decoded]:
    """The intake's decoder for one request (it fills ``tally``)."""
    limits = {
        "timeseries": (settings.remote_write_max_series, "remote_write_max_series"),
        "samples": (max_samples, "max_samples"),
    }
    total = (settings.protobuf_max_elements, "protobuf_max_elements")

    def decode(raw: bytes) -> Decoded:
        request = decode_write(
            raw, max_inflated, limits, total, deadline, settings.protobuf_parse_first_max_bytes
        )
        points = map_write(request, settings, names, max_samples, tally, deadline)
        return to_decoded(points, validator, record_max_bytes, "remote_write")

    return decode
