"""One rule's alerts within a cycle: each is folded over its new windows (alerting/windows.py),
ended when its server is gone or its query changed kind (alerting/servers.py), or set from an
age (presence.py), and its notices decided (notices.py) into the cycle's outbox and its row
recorded for the writes (alerting/evaluator.py orders them)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from alerting.cycle import Cycle
from alerting.machine import AlertState
from alerting.notices import decide, labels_of
from alerting.presence import presence_state
from alerting.rules import Rule
from alerting.servers import gone_after, gone_row, instances, is_gone, live, per_server, read_range
from alerting.settings import AlertingSettings
from alerting.windows import Windows, state_of
from apm.query import StoredQuery
from storage.alerts import HistoryRow, OutboxRow

__all__ = ["Alerts"]


class Alerts:
    def __init__(
        self, windows: Windows, settings: AlertingSettings, receivers: tuple[str, ...]
    ) -> None:
        self.windows, self.settings, self.receivers = windows, settings, receivers

    def of_rule(
        self, cyc: Cycle, rule: Rule, body: dict[str, Any], stored: StoredQuery | None
    ) -> None:
        """A threshold rule's alerts: its query's one series, or one per server of a ``BY
        server`` query (alerting/servers.py); the alerts of the other kind end."""
        text = stored.text if stored else rule.query_id
        rows = cyc.servers.get(rule.id, {})
        plain = cyc.current.get((rule.id, ""))
        if not per_server(stored, rows):
            for server, row in live(rows).items():
                self.end(cyc, rule, server, row, [], "the query is no longer BY server", text)
            self.evaluate(
                cyc,
                rule,
                body,
                stored,
                "",
                {} if plain and plain.get("gone") else plain or {},
                text,
            )
            return
        if plain and not plain.get("gone"):
            self.end(
                cyc, rule, "", plain, [], "the query is now BY server: one alert per server", text
            )
        _, first, upto, done = read_range(self.windows, stored, rows, cyc.now, body)
        reads = self.windows.server_reads
        seen = reads.servers(rule.query_id, first, upto, done) if stored else {}
        for server, row in instances(rows, seen).items():
            self.evaluate(cyc, rule, body, stored, server, row, text)

    def evaluate(
        self,
        cyc: Cycle,
        rule: Rule,
        body: dict[str, Any],
        stored: StoredQuery | None,
        instance: str,
        row: dict[str, Any],
        text: str,
    ) -> None:
        """One alert over its new windows; a server's that sent nothing for an hour ends."""
        new_row, hist, news, lag = self.windows.refold(rule, stored, row, cyc.now, body, instance)
        cyc.report.windows += len(news)
        cyc.report.lag_s = max(cyc.report.lag_s, lag)
        cyc.history += hist
        # Each new window's state in turn (a catch-up after an outage still sends the firing
        # and the resolution it passed over), else the refolded newest one.
        done = row.get("evaluated_through")
        fresh = [st for st in news if done is None or (st.window_start or 0) > done]
        if instance and is_gone(new_row, self.settings.lateness_s):
            gone = gone_after(self.settings.lateness_s)
            why = f"no results from {instance} for {gone:.0f}s or more: taken as gone"
            self.end(
                cyc, rule, instance, {**new_row, "notified": row.get("notified")}, fresh, why, text
            )
            return
        self.notify(cyc, rule, instance, row, new_row, fresh, text)

    def end(
        self,
        cyc: Cycle,
        rule: Rule,
        instance: str,
        row: dict[str, Any],
        fresh: list[AlertState],
        why: str,
        text: str,
    ) -> None:
        """Ends an alert: ``normal`` for ``why`` (a history row if that is a change), the
        resolution of what was notified, its row kept marked gone (no longer evaluated)."""
        new_row, end = gone_row(row, why)
        if state_of(row.get("latest")).state != "normal" and end.window_start is not None:
            d = asdict(end)
            cyc.history.append(HistoryRow(rule.id, end.window_start, instance, "normal", True, d))
        self.notify(cyc, rule, instance, row, new_row, [*fresh, end], text)

    def notify(
        self,
        cyc: Cycle,
        rule: Rule,
        instance: str,
        row: dict[str, Any],
        new_row: dict[str, Any],
        fresh: list[AlertState],
        query_text: str,
    ) -> None:
        """Decides the notices of one alert over its new states and records its row."""
        latest = state_of(new_row["latest"])
        labels = labels_of(rule, latest, instance)
        hits = [
            s
            for s in cyc.silences
            if s.active(cyc.now) and s.matches(rule.id, labels, instance or None)
        ]
        if latest.active and hits:
            cyc.report.suppressed += 1
            for s in hits:
                cyc.suppressed[s.id].append(
                    {"rule_id": rule.id, "server": instance, "fired_at": latest.fired_at}
                )
        notified = row.get("notified")
        for st in fresh or [latest]:
            notices, notified = decide(
                rule,
                instance,
                st,
                notified,
                now=cyc.now,
                renotify_s=self.settings.renotify_s,
                silenced=bool(hits),
                query_text=query_text,
            )
            routed = [r for r in self.receivers if rule.routes_to(r)]
            cyc.outbox += [OutboxRow(r, n.id, n.body) for n in notices for r in routed]
        if notified:  # so a resolution after the rule's deletion goes where the firing went
            notified = {**notified, "receivers": list(rule.receivers)}
        new_row["notified"] = notified
        cyc.rows.append((rule.id, instance, new_row))
        cyc.report.states[latest.state] = cyc.report.states.get(latest.state, 0) + 1

    def presence(
        self, cyc: Cycle, rule: Rule, ages: dict[str, float], bound: float, what: str
    ) -> None:
        """One alert per instance (a server, an aggregator) on its age, at this cycle's tick;
        an instance no longer listed resolves."""
        tick = math.floor(cyc.now / self.settings.interval_s) * self.settings.interval_s
        known = {i for (r, i) in cyc.current if r == rule.id}
        for instance in sorted(known | set(ages)):
            row = cyc.current.get((rule.id, instance), {})
            prior = state_of(row.get("latest"))
            age = ages.get(instance)
            if age is None and not prior.active:
                continue  # gone and quiet: nothing to resolve, nothing to record
            state = presence_state(prior, tick, age or 0.0, bound, f"{what} from {instance}")
            if state.state != prior.state:
                d = asdict(state)
                cyc.history.append(HistoryRow(rule.id, tick, instance, state.state, True, d))
            self.notify(cyc, rule, instance, row, {**row, "latest": asdict(state)}, [], "")
