"""Prometheus' ``ALERTS`` series over the alert evaluator's durable state: one series of value 1
for each alert pending or firing, labelled as Prometheus labels its own (the rule's labels,
``alertname``, ``alertstate`` = ``pending`` or ``firing``, ``severity``) plus ``rule_id`` and,
for a ``server_silent`` rule, ``server``. ``recovering``, ``nodata`` and ``error`` alerts are active
(their receivers were told), so they are ``firing`` here as well; ``normal`` alerts have no
series, as in Prometheus. An instant query answers the evaluator's newest state (the rule
listing); a range query answers each step from the stored history (:mod:`.alert_range`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from alerting.machine import ACTIVE
from dashboard.promapi.selector import ALERTS

__all__ = [
    "HISTORY_TTL_S",
    "HistoryReader",
    "alert_labels",
    "alerts_of",
    "alertstate",
    "history_of",
    "series_labels",
]

# How long storage.alerts keeps alert_history rows (its table's default TTL) when the schema
# cannot be read: no range query reads further back.
HISTORY_TTL_S = 30 * 86_400


class HistoryReader(Protocol):
    """:class:`storage.alerts.AlertStore`'s history reads: rows of ``[start, end)``, oldest
    first, each with ``window_start``, ``instance``, ``state`` and ``body``."""

    def history(self, rule_id: str, start: float, end: float) -> Iterable[Any]: ...


def alertstate(state: str | None) -> str | None:
    """Prometheus' ``alertstate`` for one of the evaluator's states (None: no series)."""
    if state == "pending":
        return "pending"
    return "firing" if state in ACTIVE else None


def series_labels(
    rule: Mapping[str, Any], server: str, shown: str, severity: str | None
) -> dict[str, str]:
    """The labels of one ``ALERTS`` series of ``rule`` (an item of the rule listing): the
    rule's own labels (but ``__``-prefixed ones, reserved), then ours over them, as the
    notifications label an alert (``alerting.notices.labels_of``)."""
    own = rule.get("labels")
    labels = {
        str(k): str(v)
        for k, v in (own.items() if isinstance(own, Mapping) else ())
        if not str(k).startswith("__")
    }
    labels |= {
        "__name__": ALERTS,
        "alertname": str(rule.get("name") or rule.get("id")),
        "alertstate": shown,
        "rule_id": str(rule.get("id")),
    }
    if severity:
        labels["severity"] = str(severity)
    if server:
        labels["server"] = server
    return labels


def alert_labels(rules: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, str]]:
    """The label sets of the ``ALERTS`` series now, from :meth:`Rulebook.rules`' listing."""
    for rule in rules:
        alerts = [("", rule.get("alert")), *sorted((rule.get("instances") or {}).items())]
        for server, latest in alerts:
            shown = alertstate((latest or {}).get("state"))
            if shown is not None:
                yield series_labels(rule, server, shown, (latest or {}).get("severity"))


def alerts_of(repo: object) -> Callable[[], list[dict[str, Any]]]:
    """The rule listing with each alert's state (ALERTS), or none when ``repo`` is not the
    Cassandra store the evaluator writes to (a store without alerting has no alerts)."""
    if getattr(repo, "session", None) is None:
        return list
    from dashboard.alerts_api import rulebook_for

    book = rulebook_for(repo)
    return lambda: book().rules()


def history_of(repo: object) -> tuple[Callable[[], HistoryReader] | None, Callable[[], float]]:
    """(the alert history's reader, how far back its rows go in seconds) over ``repo``'s
    Cassandra session, or (None, ...) when ``repo`` has no alerting tables."""
    if getattr(repo, "session", None) is None:
        return None, lambda: HISTORY_TTL_S
    from dashboard.alerts_api import rulebook_for

    book = rulebook_for(repo)

    def reader() -> HistoryReader:
        return book().tables  # type: ignore[return-value]

    return reader, lambda: history_ttl(book().tables)


def history_ttl(store: object) -> float:
    """The ``alert_history`` table's default TTL from the driver's schema metadata (the
    retention ``storage.alerts`` created it with), else :data:`HISTORY_TTL_S`."""
    try:
        keyspace = store.session.cluster.metadata.keyspaces[store.ks]  # type: ignore[attr-defined]
        ttl = int(keyspace.tables["alert_history"].options.get("default_time_to_live") or 0)
    except (AttributeError, KeyError, TypeError, ValueError):
        ttl = 0
    return float(ttl) if ttl > 0 else HISTORY_TTL_S
