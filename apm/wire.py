"""The Kafka record encoding: many samples of one metric in one record.

One record per sample caps a Python producer at ~20k records/s, so the ingest packs all
samples of a metric in a request into a few records. The value is UTF-8 text, one sample a
line, ``server<TAB>ts<TAB>value<LF>``; ``ts`` is epoch seconds and both numbers are written
with Python's shortest round-trip ``repr``, so Java's ``Double.parseDouble`` reads back the
exact double. The metric is the topic's (``apm.model.topic_for``). Names cannot contain TAB or
LF (``apm.model`` naming rules), so no escaping is needed. The record header ``enc`` says
``tsv1``; a future encoding gets a new header value.

Spark decodes it with built-in SQL functions only (see ``SPARK_DECODE_SQL``)::

    explode(split(cast(value AS STRING), '\\n')) -> split(line, '\\t') -> cast to double
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["ENCODING", "ENCODING_HEADER", "SPARK_DECODE_SQL", "decode", "encode_chunks"]

ENCODING = b"tsv1"
ENCODING_HEADER = ("enc", ENCODING)

# Select expressions over a Kafka source DataFrame (columns topic, value) giving one row per
# sample: topic, server, ts (double), value (double). Applied in two steps by the aggregator.
SPARK_DECODE_SQL = (
    "topic",
    "explode(split(cast(value AS STRING), '\\n')) AS line",
)


def encode_chunks(
    rows: Iterable[tuple[str, float, float]], max_bytes: int = 512 * 1024
) -> Iterator[bytes]:
    """Encodes (server, ts, value) rows into record values of at most ``max_bytes`` each."""
    lines: list[str] = []
    size = -1  # the length of "\n".join(lines): the lines and one LF between each two
    for server, ts, value in rows:
        line = f"{server}\t{float(ts)!r}\t{float(value)!r}"
        if lines and size + 1 + len(line) > max_bytes:
            yield "\n".join(lines).encode()
            lines, size = [], -1
        lines.append(line)
        size += 1 + len(line)
    if lines:
        yield "\n".join(lines).encode()


def decode(value: bytes) -> list[tuple[str, float, float]]:
    """The inverse of :func:`encode_chunks`, for tests and tools (Spark uses SQL instead)."""
    rows = []
    for line in value.decode().split("\n"):
        server, ts, val = line.split("\t")
        rows.append((server, float(ts), float(val)))
    return rows
