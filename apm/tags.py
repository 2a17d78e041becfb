"""Host tags: the one rule a server's tags follow, shared by the agent (its config), the ingest
(``POST /v1/metrics``) and the loadgen (its synthetic fleet), and the compacted topic that
carries each server's tags (docs/ingest.md, Tags).

A tag is ``key -> value``: the key matches ``[a-z][a-z0-9_.]*`` and is at most
:data:`MAX_TAG_KEY_LEN` characters; the value is a string of at most :data:`MAX_TAG_VALUE_LEN`
printable characters (``str.isprintable``: no control, line or format characters); a server has
at most :data:`MAX_TAGS` tags. ``server`` is reserved: the server's name is a tag of its own.

Tags do not travel in the metric records (the aggregator's decoder reads those): each server's
tags are one record of :data:`TAGS_TOPIC`, keyed by the server, compacted, so the topic keeps
the last tags of every server.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_TAGS",
    "MAX_TAG_KEY_LEN",
    "MAX_TAG_VALUE_LEN",
    "RESERVED_TAG_KEYS",
    "TAGS_TOPIC",
    "TAG_KEY_RE",
    "decode_tags_record",
    "encode_tags_record",
    "read_server_tags",
    "tag_error",
    "tag_key_error",
    "tags_error",
]

MAX_TAG_KEY_LEN = 64
MAX_TAG_VALUE_LEN = 128
MAX_TAGS = 32
TAG_KEY_RE = re.compile(r"[a-z][a-z0-9_.]{0,63}")
RESERVED_TAG_KEYS = frozenset({"server"})
# One record per server (key: the server name), cleanup.policy=compact (apm.kafka.TopicSpec).
TAGS_TOPIC = "apm.server-tags"


def tag_key_error(key: object) -> str | None:
    """Why ``key`` is not a valid tag key, or None when it is (also the query language's check
    of the keys in ``FROM key:glob``, ``WHERE`` and ``BY``)."""
    if not isinstance(key, str):
        return f"tag key must be a string, got {type(key).__name__}"
    if not TAG_KEY_RE.fullmatch(key):
        return (
            f"tag key {key[:70]!r} must match [a-z][a-z0-9_.]* "
            f"(at most {MAX_TAG_KEY_LEN} characters)"
        )
    if key in RESERVED_TAG_KEYS:
        return f"tag key {key!r} is reserved (the server's name is its own tag)"
    return None


def tag_error(key: object, value: object) -> str | None:
    """Why ``key = value`` is not a valid tag, or None when it is."""
    if (problem := tag_key_error(key)) is not None:
        return problem
    if not isinstance(value, str):
        return f"tag {key!r} must have a string value, got {type(value).__name__}"
    if len(value) > MAX_TAG_VALUE_LEN:
        return f"tag {key!r} has a value of {len(value)} characters (at most {MAX_TAG_VALUE_LEN})"
    if not value.isprintable():
        return f"tag {key!r} has a value with a non-printable character: {value[:40]!r}"
    return None


def tags_error(tags: object) -> tuple[str, str] | None:
    """Why ``tags`` is not a valid tag set: (the offending key, or "" for the whole set, and
    the reason); None when it is valid. Checks the count before any key, so a huge object
    costs one ``len``."""
    if not isinstance(tags, dict):
        return "", f"tags must be an object of key -> string value, got {type(tags).__name__}"
    if len(tags) > MAX_TAGS:
        return "", f"{len(tags)} tags, more than {MAX_TAGS}"
    for key, value in tags.items():
        problem = tag_error(key, value)
        if problem is not None:
            return str(key), problem
    return None


def encode_tags_record(server: str, tags: Mapping[str, str], ts: float) -> tuple[bytes, bytes]:
    """The (key, value) of ``server``'s record in :data:`TAGS_TOPIC`: the key is the server's
    name, the value ``{"server", "tags", "ts"}`` as JSON with sorted keys."""
    value = json.dumps(
        {"server": server, "tags": dict(sorted(tags.items())), "ts": ts},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return server.encode(), value.encode()


def decode_tags_record(value: bytes) -> tuple[str, dict[str, str], float]:
    """(server, tags, ts) of one record of :data:`TAGS_TOPIC`; ValueError if it is none."""
    doc = json.loads(value)
    if not isinstance(doc, dict) or not isinstance(doc.get("server"), str):
        raise ValueError("a server-tags record is an object with a 'server' string")
    tags, ts = doc.get("tags"), doc.get("ts")
    if not isinstance(tags, dict) or tags_error(tags) is not None:
        raise ValueError(f"bad tags in the server-tags record of {doc['server']!r}")
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        raise ValueError(f"bad ts in the server-tags record of {doc['server']!r}")
    return doc["server"], dict(tags), float(ts)


def read_server_tags(
    bootstrap: str,
    servers: set[str] | None = None,
    max_servers: int = 1_000_000,
    timeout_s: float = 30.0,
    topic: str = TAGS_TOPIC,
) -> dict[str, tuple[dict[str, str], float]]:
    """{server: (its last tags, their ts)} as the tags topic holds them now (read from its
    start up to its end offsets), only ``servers``' when given. Bounded: at most
    ``max_servers`` servers (ValueError beyond) and ``timeout_s`` (TimeoutError). A record
    that is no server-tags record is skipped."""
    from apm.kafka import new_consumer, topic_partitions

    deadline = time.monotonic() + timeout_s
    consumer: Any = new_consumer(bootstrap, consumer_timeout_ms=1000)
    out: dict[str, tuple[dict[str, str], float]] = {}
    try:
        parts = topic_partitions(consumer, [topic])
        if not parts:
            return out
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)
        while any(consumer.position(tp) < end[tp] for tp in parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} took more than {timeout_s:g}s")
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    if record.value is None:  # a tombstone: the server's tags are gone
                        out.pop((record.key or b"").decode("utf-8", "replace"), None)
                        continue
                    try:
                        server, tags, ts = decode_tags_record(record.value)
                    except ValueError:
                        continue
                    if servers is not None and server not in servers:
                        continue
                    out[server] = (tags, ts)
                    if len(out) > max_servers:
                        raise ValueError(f"{topic} holds more than {max_servers} servers")
        return out
    finally:
        consumer.close()
