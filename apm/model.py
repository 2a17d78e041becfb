"""What crosses stage boundaries: samples, snapshots, and the naming rules for metrics,
servers and topics. Every stage imports these; none re-declares them.

A *sample* is one value of one metric on one server at one second. A *snapshot* is one
server's metrics at one second, the unit the agent sends and the ingest validates.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

__all__ = [
    "BYTES_PER_SAMPLE",
    "DESIGN_SERVERS",
    "KAFKA_TOPIC_RE",
    "MAX_NAME_LEN",
    "MAX_TOPIC_LEN",
    "METRIC_NAME_RE",
    "PARTITION_BYTES_PER_S",
    "SERVER_NAME_RE",
    "TOPIC_PARTITIONS",
    "TOPIC_PREFIX",
    "Sample",
    "Snapshot",
    "metric_for_topic",
    "metric_name_error",
    "metric_sql",
    "partitions_for",
    "server_name_error",
    "topic_for",
    "value_error",
]

# Kafka topic names allow [a-zA-Z0-9._-] up to 249 characters; the prefix takes 11 of them.
# The same alphabet keeps names free of the separators used by the record encoding (apm.wire).
MAX_NAME_LEN = 200
METRIC_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,199}")
SERVER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}")

TOPIC_PREFIX = "apm.metric."
# What Kafka takes as a topic name (kafka.common.internals.Topic).
KAFKA_TOPIC_RE = re.compile(r"[A-Za-z0-9._\-]{1,249}")
MAX_TOPIC_LEN = 249

# Partitions per metric topic, sized by volume. A metric topic carries at most one sample per
# server per second, so its bytes/s are servers x bytes per sample, whatever the metric count.
# A deliberately conservative planning figure for what one partition takes: a Kafka partition
# sustains ~10 MB/s of appends on ordinary disks (the case study quotes ~100 MB/s per broker),
# so 1 MB/s leaves a tenfold margin for replication, catch-up reads and slow disks.
PARTITION_BYTES_PER_S = 1_000_000
# Measured bytes of one sample in a Kafka record (an apm.wire line: server, ts, value), before
# replication: 33.6 in the capacity section of docs/BENCHMARKS.md (make bench-pipeline).
BYTES_PER_SAMPLE = 34
# The fleet the design is sized for (the case study: 10,000 servers).
DESIGN_SERVERS = 10_000


def partitions_for(
    servers: int,
    bytes_per_sample: float = BYTES_PER_SAMPLE,
    partition_bytes_per_s: float = PARTITION_BYTES_PER_S,
) -> int:
    """Partitions one metric topic needs for ``servers`` servers sending one sample per second:
    ceil(servers x bytes_per_sample / partition_bytes_per_s), at least 1."""
    if isinstance(servers, bool) or not isinstance(servers, int) or servers < 1:
        raise ValueError(f"servers must be a whole number >= 1, got {servers!r}")
    if not bytes_per_sample > 0 or not partition_bytes_per_s > 0:
        raise ValueError(
            f"bytes_per_sample and partition_bytes_per_s must be > 0, got "
            f"{bytes_per_sample!r} and {partition_bytes_per_s!r}"
        )
    return max(1, math.ceil(servers * bytes_per_sample / partition_bytes_per_s))


# The default partition count of every metric topic the ingest (or the loadgen) creates:
# 10,000 x 34 B = 340 KB/s per topic, a third of one partition's planning figure -> 1.
# Topics keep the count they were created with; Kafka can add partitions, never remove them.
TOPIC_PARTITIONS = partitions_for(DESIGN_SERVERS)


class Sample(NamedTuple):
    server: str
    metric: str
    ts: float  # epoch seconds
    value: float


class Snapshot(NamedTuple):
    server: str
    ts: float
    metrics: dict[str, float]
    # The server's host tags (apm.tags); sent only when there are some.
    tags: dict[str, str] | None = None

    def samples(self) -> list[Sample]:
        return [Sample(self.server, m, self.ts, v) for m, v in self.metrics.items()]

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"server": self.server, "ts": self.ts, "metrics": self.metrics}
        if self.tags:
            doc["tags"] = self.tags
        return doc


def metric_name_error(name: object) -> str | None:
    """Why ``name`` is not a valid metric name, or None when it is."""
    if not isinstance(name, str):
        return "metric name must be a string"
    if not METRIC_NAME_RE.fullmatch(name):
        return (
            f"metric name {name[:60]!r} must start with a letter and contain only letters, "
            f"digits, '.', '_' or '-' (at most {MAX_NAME_LEN} characters)"
        )
    return None


def server_name_error(name: object) -> str | None:
    """Why ``name`` is not a valid server name, or None when it is."""
    if not isinstance(name, str):
        return "server name must be a string"
    if not SERVER_NAME_RE.fullmatch(name):
        return (
            f"server name {name[:60]!r} must start with a letter or digit and contain only "
            f"letters, digits, '.', '_' or '-' (at most {MAX_NAME_LEN} characters)"
        )
    return None


def value_error(value: object) -> str | None:
    """Why ``value`` is not a valid sample value (a finite number, not a bool), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"value must be a number, got {type(value).__name__}"
    if not math.isfinite(value):
        return f"value must be finite, got {value}"
    return None


# --- topics ----------------------------------------------------------------------------------
# Kafka refuses a topic whose name equals an existing one once '.' and '_' are read as the same
# character (they are one in its JMX metric names): with ``apm.metric.<name>`` the metric
# ``cpu_util`` could never get a topic once ``cpu.util`` had one. So no topic name holds a
# '_', and the mapping stays one to one:
#
# - a name without '_' keeps its topic, ``apm.metric.<name>`` (every topic made before);
# - a name with '_' gets ``apm.metric.-<name with '_' as '.'><mask>``: the '-' right after the
#   prefix cannot start a name (names start with a letter), and the mask says which of the
#   '.' were '_': bit i is the i-th '.'/'_' of the name, 17 bits per 3 base-62 digits, as
#   many groups as the '.' count needs. The mask has no '.', so its length follows from the
#   '.' count of the rest: no separator is needed. Longest: 11 + 1 + 200 + 36 = 248 <= 249.
#
# ``metric_sql`` is the same decoding in Spark SQL (the aggregator's plan), ``metric_for_topic``
# in Python; both are checked against ``topic_for`` in tests/apm/test_model.py.
_ESCAPED = "-"
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_GROUP_BITS, _GROUP_CHARS = 17, 3  # 62**3 = 238,328 >= 2**17


def _mask(metric: str) -> str:
    flags = [c == "_" for c in metric if c in "._"]
    out = []
    for start in range(0, len(flags), _GROUP_BITS):
        value = sum(1 << i for i, flag in enumerate(flags[start : start + _GROUP_BITS]) if flag)
        digits = ""
        for _ in range(_GROUP_CHARS):
            value, digit = divmod(value, len(_DIGITS))
            digits = _DIGITS[digit] + digits
        out.append(digits)
    return "".join(out)


def topic_for(metric: str) -> str:
    """The Kafka topic that carries one metric (one topic per metric, as the design says).
    One to one over valid names, never two topics Kafka takes for the same (no '_'), always
    a legal topic name (the comment above says how)."""
    if "_" not in metric:
        return TOPIC_PREFIX + metric
    return TOPIC_PREFIX + _ESCAPED + metric.replace("_", ".") + _mask(metric)


def metric_for_topic(topic: str) -> str | None:
    """The metric whose topic is ``topic``, or None if it is no metric's topic (another
    topic, or a topic of the old naming that a name with '_' no longer uses)."""
    if not topic.startswith(TOPIC_PREFIX):
        return None
    rest = topic[len(TOPIC_PREFIX) :]
    if rest.startswith(_ESCAPED):
        rest = rest[1:]
        size = _GROUP_CHARS * -(-rest.count(".") // _GROUP_BITS)
        dotted, mask = (rest[:-size], rest[-size:]) if size else (rest, "")
        if any(c not in _DIGITS for c in mask):
            return None
        flags = 0
        for group in range(len(mask) // _GROUP_CHARS):
            value = 0
            for c in mask[group * _GROUP_CHARS : (group + 1) * _GROUP_CHARS]:
                value = value * len(_DIGITS) + _DIGITS.index(c)
            flags |= value << (group * _GROUP_BITS)
        parts = dotted.split(".")
        name = parts[0] + "".join(
            ("_" if flags >> i & 1 else ".") + part for i, part in enumerate(parts[1:])
        )
    else:
        name = rest
    if metric_name_error(name) is not None or topic_for(name) != topic:
        return None
    return name


def metric_sql(topic: str = "topic") -> str:
    """A Spark SQL expression of the metric whose topic is the column ``topic`` (built-in
    functions only: the aggregator's plan has no Python UDF). Defined for the topics
    ``topic_for`` makes; a name without '_' costs a substring, as before."""
    start = len(TOPIC_PREFIX) + 1
    rest = f"substr({topic}, {start + 1})"
    dots = f"(size(split({rest}, '[.]', -1)) - 1)"
    size = f"({_GROUP_CHARS} * CAST(ceil({dots} / {_GROUP_BITS}) AS INT))"
    dotted = f"substr({rest}, 1, length({rest}) - {size})"
    mask = f"substr({rest}, length({rest}) - {size} + 1)"
    group = f"(((i - 1) div {_GROUP_BITS}) * {_GROUP_CHARS})"
    digits = [
        f"(instr('{_DIGITS}', substr({mask}, {group} + {k + 1}, 1)) - 1)"
        for k in range(_GROUP_CHARS)
    ]
    value = " + ".join(
        f"{d} * {len(_DIGITS) ** (_GROUP_CHARS - 1 - k)}" for k, d in enumerate(digits)
    )
    bit = f"(shiftright({value}, (i - 1) % {_GROUP_BITS}) & 1)"
    decoded = (
        f"array_join(transform(split({dotted}, '[.]', -1), (p, i) -> "
        f"IF(i = 0, p, concat(IF({bit} = 1, '_', '.'), p))), '')"
    )
    return (
        f"CASE WHEN substr({topic}, {start}, 1) = '{_ESCAPED}' THEN {decoded} "
        f"ELSE substr({topic}, {start}) END"
    )
