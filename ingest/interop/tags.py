"""Host tags from what the protocols say about a server (docs/interop.md, "Tags"): an OTLP
resource's attributes and a remote_write series' labels, each through a mapping of
``attribute or label -> tag key`` (settings ``otlp_resource_tags``, ``remote_write_tag_labels``).

Only the mapped names become tags, so a tag is always something the operator chose to group by;
what identifies the server (``host.name``, ``service.instance.id``, the server label) never
does, nor do the SDKs' placeholder service names (``unknown_service[:<process>]``). A value the
shared rule (apm.tags) refuses is left out and counted, never the request's samples.

A server's tags are one set: when two resources or series of one request map one key of the
same server to different values (two services exporting under one ``host.name``), that key is
left out of the request's tags and counted, rather than flapping between them with every
export; ``otlp_server_with_instance`` keeps such services apart. A server whose agent sends
tags keeps the agent's (ingest.tags: the agent's tags win over a protocol's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from apm.tags import MAX_TAGS, TAG_KEY_RE, tag_error

__all__ = [
    "OTLP_IDENTIFYING",
    "OTLP_RESOURCE_TAGS",
    "RequestTags",
    "mapped_tags",
    "mapping_error",
]

# What names the server (otlp_identity), never a tag.
OTLP_IDENTIFYING = frozenset({"host.name", "service.instance.id"})
# OpenTelemetry's semantic conventions onto the short keys users group by. Where two attributes
# map to one key, the first one present wins (deployment.environment.name is the newer name).
OTLP_RESOURCE_TAGS: dict[str, str] = {
    "service.name": "service",
    "deployment.environment.name": "env",
    "deployment.environment": "env",
    "service.namespace": "service.namespace",
    "service.version": "service.version",
    "cloud.provider": "cloud.provider",
    "cloud.region": "cloud.region",
    "cloud.availability_zone": "cloud.availability_zone",
    "k8s.cluster.name": "k8s.cluster.name",
    "k8s.namespace.name": "k8s.namespace.name",
    "host.arch": "arch",
    "os.type": "os",
}
_PLACEHOLDER = "unknown_service"


def mapping_error(mapping: Mapping[str, str], identifying: Iterable[str]) -> str | None:
    """Why ``mapping`` (attribute or label -> tag key) cannot be used, or None."""
    ids = set(identifying)
    if len(set(mapping.values())) > MAX_TAGS:
        return f"maps to {len(set(mapping.values()))} tag keys, more than a server's {MAX_TAGS}"
    for name, key in mapping.items():
        if name in ids:
            return f"{name!r} identifies the server, so it cannot also be a tag"
        if not TAG_KEY_RE.fullmatch(key) or key == "server":
            return (
                f"{name!r} maps to {key!r}, which is not a tag key ([a-z][a-z0-9_.]*, not server)"
            )
    return None


def mapped_tags(
    values: Mapping[str, str], mapping: Mapping[str, str]
) -> tuple[dict[str, str], int]:
    """(the tags ``mapping`` makes of ``values``, how many values the tag rule refused)."""
    tags: dict[str, str] = {}
    refused = 0
    for name, key in mapping.items():
        value = values.get(name)
        if not value or key in tags:
            continue
        if name == "service.name" and value.startswith(_PLACEHOLDER):
            continue
        if tag_error(key, value) is None:
            tags[key] = value
        else:
            refused += 1
    return tags, refused


class RequestTags:
    """The tags one request says of each server: the keys all its sources agree on."""

    def __init__(self) -> None:
        self.tags: dict[str, dict[str, str]] = {}
        self._split: dict[str, set[str]] = {}
        self.dropped = 0  # values refused by the rule, and keys the sources disagree on

    def add(self, server: str, tags: Mapping[str, str]) -> None:
        mine = self.tags.setdefault(server, {})
        split = self._split.setdefault(server, set())
        for key, value in tags.items():
            if key in split:
                continue
            if mine.setdefault(key, value) != value:
                del mine[key]
                split.add(key)
                self.dropped += 1

    def of(self, server: str) -> dict[str, str]:
        return self.tags.get(server, {})
