"""OpenTelemetry's identity of a stream, as the OTLP mapping (ingest.interop.otlp_map) uses it:
the resource's server and service name parts, attribute values as text, and the fixed-size
digest that keys a series' rate state (docs/interop.md, "Identity")."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from typing import Any, NamedTuple

from apm.labels import server_from_label

__all__ = ["Labels", "Resource", "digest", "point_metric", "resource_of", "text_of"]

Labels = tuple[tuple[str, str], ...]
_HOST, _INSTANCE = "host.name", "service.instance.id"
# The resource attributes that name a service: name parts of its metrics, so that two services
# on one host publish two series (the SDKs' default "unknown_service[:<process>]" is no name).
_SERVICE_KEYS = ("service.namespace", "service.name")
_UNKNOWN_SERVICE = "unknown_service"


def text_of(value: Any) -> str | None:
    """An AnyValue as a name part's text; None for arrays, maps and bytes."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return str(value.string_value)
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "int_value":
        return str(value.int_value)
    if kind == "double_value":
        return repr(value.double_value)
    return None


class Resource(NamedTuple):
    """One resource's identity: ``server`` (None: no valid one, ``source`` says why),
    the name parts of its service, and ``key``, every attribute, for the rate state."""

    server: str | None
    source: str
    parts: tuple[tuple[str, str], ...]
    key: tuple[tuple[str, str], ...]


def resource_of(resource: Any, default: str, with_instance: bool = False) -> Resource:
    """The server is ``host.name`` (with ``.<service.instance.id>`` when ``with_instance``
    and the resource has both: two processes of one service on one host are two servers);
    else the instance id; else ``default``."""
    attrs = {kv.key: text_of(kv.value) or "" for kv in resource.attributes}
    key = tuple(sorted(attrs.items()))
    parts = tuple(
        (k, attrs[k])
        for k in _SERVICE_KEYS
        if attrs.get(k) and not attrs[k].startswith(_UNKNOWN_SERVICE)
    )
    host, instance = attrs.get(_HOST), attrs.get(_INSTANCE)
    raw = f"{host}.{instance}" if host and instance and with_instance else host or instance
    if not raw:
        return Resource(default, "otlp_default_server", parts, key)
    source = f"{_HOST if host else _INSTANCE}={raw[:60]!r}"
    return Resource(server_from_label(raw), source, parts, key)


def digest(identity: Hashable) -> bytes:
    text = repr(identity).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()


def point_metric(name: str) -> str:
    """The instrument name as the series budget counts it (bounded in length)."""
    return name[:200]
