"""One evaluation cycle: every rule on every completed window of its query, in event time.

Per alert the durable row holds a *checkpoint* (the state after the last window past the
lateness horizon, which late data can no longer change), the states of the windows after it
(still open to late data) and what was last notified. Each cycle refolds the open windows from
the checkpoint over the stored results, so a window refined by late data re-evaluates it, and
writes only the history rows that changed. Order of writes: history, outbox, then the state
row, and only the state rows changed in substance (the others now and then:
alerting/persist.py); a crash anywhere replays the same fold and rewrites the same keys.

A window is complete ``settle_s`` after its end. An evaluator that fell behind catches up at
most ``max_windows_per_cycle`` windows per rule a cycle and never skips a window; how far
behind it is shows as ``apm_alerting_lag_seconds``.
"""

from __future__ import annotations

import logging
from typing import Any

from alerting.alerts import Alerts
from alerting.cycle import AlertTables, Cycle, CycleReport, ResultsReader
from alerting.notices import resolution
from alerting.persist import StateWrites
from alerting.presence import META_RULE_ID, meta_ages, meta_rule, silent_ages
from alerting.rules import Rule, RuleError, rule_from_dict
from alerting.servers import per_server, read_range
from alerting.settings import AlertingSettings
from alerting.silences import Silence, SilenceError, silence_from_dict
from alerting.windows import Windows
from apm.query import StoredQuery
from storage.alerts import OutboxRow

__all__ = ["CycleReport", "Evaluator", "ResultsReader"]

log = logging.getLogger(__name__)

Plan = tuple[Rule, dict[str, Any], StoredQuery | None]
Reads = set[tuple[str, float, float, int]]
ServerRanges = set[tuple[str, float, float, int, float | None]]


class Evaluator:
    def __init__(
        self,
        results: ResultsReader,
        tables: AlertTables,
        settings: AlertingSettings,
        receivers: tuple[str, ...] = (),
    ) -> None:
        self.results, self.tables, self.settings = results, tables, settings
        self.receivers = receivers
        self.windows = Windows(results, settings)
        self.alerts = Alerts(self.windows, settings, receivers)
        self.writes = StateWrites(settings.state_refresh_s)
        self._rules: dict[str, tuple[dict[str, Any], Rule]] = {}
        # The alert rows as this process last computed them: read from Cassandra once at start
        # (and again after a failed cycle), not scanned every cycle. One evaluator writes them;
        # those unchanged in substance are written only now and then (alerting/persist.py).
        self._current: dict[tuple[str, str], dict[str, Any]] | None = None

    def reload(self) -> None:
        """Forget the alert rows as last computed here: another evaluator may have written them
        since (this one has just taken the lease over)."""
        self._current = None
        self.writes.forget()
        self.windows.server_reads.forget()  # read every open window again

    def run_once(self, now: float) -> CycleReport:
        try:
            return self._run_once(now)
        except BaseException:
            self.reload()  # what was written is unknown: read it again next cycle
            raise

    def _run_once(self, now: float) -> CycleReport:
        report = CycleReport()
        with report.timed("plan"):
            cyc, plans, stored_rules, reads, server_reads = self._plan(now, report)
        with report.timed("read"):
            self.windows.prefetch(reads)
            self.windows.server_reads.prefetch(server_reads)
        with report.timed("fold"):
            for rule, body, stored in plans:
                self.alerts.of_rule(cyc, rule, body, stored)
            self._meta(cyc)
            gone = self._resolve_deleted(cyc, set(stored_rules))
            touched = {(h.rule_id, h.instance) for h in cyc.history}
            due = self.writes.select(cyc.current, cyc.rows, touched, now)
        with report.timed("history"):
            self.tables.put_history(cyc.history)
            self.tables.enqueue(cyc.outbox)
        with report.timed("state"):
            self.tables.put_current(due)
            # Only once their resolutions are in the outbox (a crash before re-sends the ids).
            for rule_id in sorted(gone):
                self.tables.delete_current(rule_id)
                self._rules.pop(rule_id, None)
                self.writes.drop(rule_id)
            for sid, items in cyc.suppressed.items():
                self.tables.set_suppressed(sid, items[-100:])
        cyc.current.update({(r, i): b for r, i, b in cyc.rows})
        for key in [k for k in cyc.current if k[0] in gone]:
            del cyc.current[key]
        report.history_rows, report.notices = len(cyc.history), len(cyc.outbox)
        report.state_rows = len(due)
        return report

    def _plan(
        self, now: float, report: CycleReport
    ) -> tuple[Cycle, list[Plan], set[str], Reads, ServerRanges]:
        """The cycle's silences and rows, its threshold rules (server-silent ones are evaluated
        here, on the servers' last sightings) and the result ranges they read: of queries' one
        series, and of ``BY server`` queries' per-server series."""
        self.windows.new_cycle()
        silences = self._silences()
        if self._current is None:
            self._current = self.tables.current()
        cyc = Cycle(now, report, silences, {s.id: [] for s in silences}, self._current)
        for (rule_id, instance), row in self._current.items():  # one pass, not one per rule
            if instance:
                cyc.servers.setdefault(rule_id, {})[instance] = row
        # One scan of the stored queries, not one read per query.
        queries: dict[str, StoredQuery] = {q.id: q for q in self.results.list_queries()}
        servers: dict[str, float] | None = None
        plans = []
        stored_rules = self.tables.rules()
        for rule_id, body in sorted(stored_rules.items()):
            try:
                rule = self._rule(rule_id, body)
            except RuleError as exc:  # validated when stored: only a hand-edited row gets here
                log.error("rule %s no longer validates (%s): skipped", rule_id, exc)
                report.errors += 1
                continue
            report.rules += 1
            if rule.kind == "server_silent":
                servers = self.results.list_servers() if servers is None else servers
                ages = silent_ages(rule, servers, now)
                self.alerts.presence(cyc, rule, ages, float(rule.silent_after_s), "no sample")
            else:
                plans.append((rule, body, queries.get(rule.query_id)))
        reads: Reads = set()
        server_reads: ServerRanges = set()
        for rule, body, stored in plans:
            rows = cyc.servers.get(rule.id, {})
            if stored is not None and per_server(stored, rows):
                ws, first, upto, done = read_range(self.windows, stored, rows, now, body)
                if upto >= first:
                    server_reads.add((rule.query_id, first, upto, ws, done))
                continue
            row = cyc.current.get((rule.id, ""), {})
            ws, _, first, upto = self.windows.bounds(stored, row, now, body)
            if stored is not None and upto >= first:
                reads.add((rule.query_id, first, upto, ws))
        return cyc, plans, set(stored_rules), reads, server_reads

    def _resolve_deleted(self, cyc: Cycle, stored: set[str]) -> set[str]:
        """The rules with alert rows but no longer stored (deleted): each notified alert of
        theirs gets its resolution; their rows are dropped after this cycle's writes."""
        gone = {r for r, _ in cyc.current if r not in stored and r != META_RULE_ID}
        for (rule_id, _), row in sorted(cyc.current.items()):
            notified = row.get("notified") if rule_id in gone else None
            if notified:
                n = resolution(notified, "the rule was deleted", cyc.now)
                routed = notified.get("receivers") or self.receivers
                cyc.outbox += [OutboxRow(r, n.id, n.body) for r in self.receivers if r in routed]
        return gone

    def _meta(self, cyc: Cycle) -> None:
        bound = self.settings.freshness_bound_s
        try:
            ages = meta_ages(self.results.get_status(), cyc.now)
        except Exception as exc:  # the status table unreadable is itself worth an alert
            log.warning("cannot read the aggregator's status: %s", exc)
            ages = {}
        ages["evaluator"] = cyc.report.lag_s
        self.alerts.presence(cyc, meta_rule(bound), ages, bound, "behind")

    def _rule(self, rule_id: str, body: dict[str, Any]) -> Rule:
        """The rule of a stored body, parsed again only when the body changed."""
        known = self._rules.get(rule_id)
        if known is None or known[0] != body:
            known = self._rules[rule_id] = (body, rule_from_dict(body, rule_id=rule_id))
        return known[1]

    def _silences(self) -> list[Silence]:
        out = []
        for sid, (body, _) in self.tables.silences().items():
            try:
                out.append(silence_from_dict(body, silence_id=sid))
            except SilenceError as exc:
                log.error("silence %s no longer validates (%s): skipped", sid, exc)
        return out
