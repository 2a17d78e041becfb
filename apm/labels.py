"""Labels, tags and attributes made into metric names: the one naming rule that DogStatsD tags
(the agent), Prometheus remote_write labels and OpenTelemetry attributes (the ingest) share.

Every distinct metric name becomes a Kafka topic, so a label whose value grows without bound
(an id, a uuid, a timestamp, a token) must not become a name part: :func:`unbounded_tag` says
which look so, and :func:`labelled_name` leaves them out and counts them. ``TAGS_KEEP`` lists the
keys that are kept whatever their values look like (status codes, ports, shards).

A name part is ``key_value`` with every character outside ``[A-Za-z0-9_-]`` made ``_``; the
parts follow the base name sorted, joined by ``.``: ``http.server.duration`` with
``{"method": "GET", "status": "200"}`` is ``http.server.duration.method_GET.status_200``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from apm.model import metric_name_error, server_name_error

__all__ = [
    "LABELS_KEEP",
    "TAGS_KEEP",
    "LabelPolicy",
    "Named",
    "Namer",
    "base_name",
    "labelled_name",
    "server_from_label",
    "tag_part",
    "unbounded_tag",
]

# Tag keys whose values are few however they look (HTTP status codes, ports, shards).
TAGS_KEEP = (
    "status",
    "status_code",
    "http_status",
    "code",
    "port",
    "shard",
    "partition",
    "version",
)
# Prometheus' and OpenTelemetry's labels add the numeric ones that are bounded by design: a
# histogram's bucket bound (le), a summary's quantile and a CPU's number.
LABELS_KEEP = (*TAGS_KEEP, "le", "quantile", "cpu")

_ID_KEYS = re.compile(
    r"(?:.*[_.\-])?(?:id|ids|uuid|guid|trace|span|session|request|req|user|email|ip|addr"
    r"|client_ip|remote_addr|url|uri|query|nonce|token|timestamp|ts|time)",
    re.IGNORECASE,
)
_UUID = re.compile(
    r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
)
_LONG_HEX = re.compile(r"(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{12,}")
_NUMBERS_ONLY = re.compile(r"[+\-]?[0-9][0-9.:_\-]*")
_TOKEN = re.compile(r"(?=(?:[^0-9]*[0-9]){4})(?=.*[A-Za-z])[A-Za-z0-9_\-+/=]{16,}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")
_PART_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]+")
# Longer values are unbounded anyway (unbounded_tag); the cut keeps the regexes' work bounded.
_MAX_VALUE = 256


def unbounded_tag(tag: str, keep: Iterable[str] = TAGS_KEEP) -> bool:
    """Whether a DogStatsD tag (``key:value`` or a bare ``value``) looks like it takes a new
    value per request, user or process, and so would make a new metric name each time."""
    key, sep, value = tag.partition(":")
    if not sep:
        key, value = "", tag
    if key and key.lower() in {k.lower() for k in keep}:
        return False
    if key and _ID_KEYS.fullmatch(key):
        return True
    return bool(
        len(value) > 64
        or _UUID.search(value)
        or _LONG_HEX.search(value)
        or _NUMBERS_ONLY.fullmatch(value)
        or _TOKEN.search(value)
    )


def tag_part(tag: str) -> str:
    """A DogStatsD tag (``key:value``) or a label ``key:value`` as a name part (may be "")."""
    return _PART_UNSAFE.sub("_", tag.replace(":", "_", 1)).strip("_")


def base_name(raw: str) -> str:
    """An instrument or series name with characters outside the naming rule made ``_`` (an
    OpenTelemetry ``/``, a Prometheus ``:``), outer dots removed. Not checked: see
    :func:`labelled_name`."""
    return _UNSAFE.sub("_", raw).strip(".")


def server_from_label(raw: str) -> str | None:
    """A server name from a label or resource attribute (``instance="10.0.0.7:9100"`` ->
    ``10.0.0.7_9100``): characters outside the rule made ``_``, leading ones that cannot
    start a name removed; None when nothing valid remains (empty, or over 200 characters)."""
    name = _UNSAFE.sub("_", raw).lstrip("_.-")
    return None if server_name_error(name) else name


@dataclass(frozen=True)
class LabelPolicy:
    """Which labels become name parts. ``include`` None means every label not in
    ``exclude``; labels that look unbounded are left out unless ``drop_unbounded`` is off or
    their key is in ``keep``."""

    include: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    drop_unbounded: bool = True
    keep: tuple[str, ...] = TAGS_KEEP

    @classmethod
    def of(
        cls,
        include: Iterable[str],
        exclude: Iterable[str] = (),
        drop_unbounded: bool = True,
        keep: Iterable[str] = TAGS_KEEP,
    ) -> LabelPolicy:
        """From settings: ``include`` ``["*"]`` means every label."""
        chosen = frozenset(include)
        return cls(
            None if "*" in chosen else chosen,
            frozenset(exclude),
            drop_unbounded,
            tuple(k.lower() for k in keep),
        )

    def chosen(self, key: str) -> bool:
        if key in self.exclude:
            return False
        return self.include is None or key in self.include


class Named(NamedTuple):
    """The outcome of :func:`labelled_name`: ``name`` is None when no valid name results
    (``error`` says why); ``dropped`` counts the chosen labels left out as unbounded."""

    name: str | None
    error: str | None
    dropped: int


def labelled_name(base: str, labels: Iterable[tuple[str, str]], policy: LabelPolicy) -> Named:
    """The platform metric name of a series: ``base`` (mapped by :func:`base_name`) plus each
    chosen label as a sorted ``.key_value`` part. Labels with an empty value are absent (as in
    Prometheus); unbounded-looking ones are dropped and counted. The result follows
    ``apm.model.metric_name_error`` or is None with the reason."""
    parts: list[str] = []
    dropped = 0
    for key, value in labels:
        if not value or not policy.chosen(key):
            continue
        tag = f"{key}:{value[:_MAX_VALUE]}"
        if policy.drop_unbounded and (len(value) > _MAX_VALUE or unbounded_tag(tag, policy.keep)):
            dropped += 1
            continue
        part = tag_part(tag)
        if part:
            parts.append(part)
    name = ".".join([base_name(base), *sorted(parts)])
    error = metric_name_error(name)
    return Named(None, error, dropped) if error else Named(name, None, dropped)


class Namer:
    """:func:`labelled_name` under one policy, with the names of label sets seen before kept
    (a hit skips the regexes of the guard: the same series arrive every scrape or export).
    The cache is bounded in entries (``cache_size``) and in bytes (``max_bytes``, the label
    text it holds plus a fixed overhead per entry): it is emptied when either is reached, so
    a flood of distinct label sets costs time, never memory, and label sets longer than
    ``max_entry_bytes`` are named without being kept. ``dropped`` is counted on every call,
    hit or not; ``on_evict`` is called with the entries dropped at each emptying."""

    def __init__(
        self,
        policy: LabelPolicy,
        cache_size: int = 100_000,
        max_bytes: int = 16 * 1024 * 1024,
        max_entry_bytes: int = 2048,
        on_evict: Callable[[int], None] = lambda n: None,
    ) -> None:
        self.policy = policy
        self.cache_size = cache_size
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.bytes = 0
        self._on_evict = on_evict
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], Named] = {}

    def name(self, base: str, labels: tuple[tuple[str, str], ...]) -> Named:
        key = (base, labels)
        named = self._cache.get(key)
        if named is None:
            named = labelled_name(base, labels, self.policy)
            size = _ENTRY_BYTES + len(base) + sum(len(k) + len(v) for k, v in labels)
            size += len(named.name or "")
            if size > self.max_entry_bytes:
                return named
            if len(self._cache) >= self.cache_size or self.bytes + size > self.max_bytes:
                self._on_evict(len(self._cache))
                self._cache.clear()
                self.bytes = 0
            self._cache[key] = named
            self.bytes += size
        return named


# A cache entry's fixed cost beyond its text: the dict slot, the key and label tuples, the
# Named and the str headers (measured ~400 bytes for a name of three labels; rounded up).
_ENTRY_BYTES = 512
