"""``kill -9`` of the evaluator process while an alert is pending and while it is firing: after
each restart the history holds exactly the transitions of an uninterrupted run (the fold of the
final windows), the firing alert is not sent again as new, and its resolution is sent once."""

from __future__ import annotations

import math
import signal
import subprocess
import time

import pytest

from alerting.machine import AlertState, Observation, fold
from alerting.rulebook import Rulebook
from tests.support.evaluator import evaluator_env, start_evaluator, wait_for
from tests.support.webhook import webhook_receiver

pytestmark = pytest.mark.integration


def test_kill9_while_pending_and_while_firing(
    cassandra_session, own_keyspace, make_rule_body, tmp_path
):
    from apm.query import WindowResult
    from storage.alerts import AlertStore
    from storage.repository import Repository

    alert_keyspace = own_keyspace
    tables = AlertStore(cassandra_session, alert_keyspace)
    base = math.floor(time.time() / 10) * 10 - 300.0  # 30 complete windows ago
    repo = Repository(cassandra_session, alert_keyspace, clock=lambda: base)
    query = repo.save_query("FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    rule = Rulebook(repo, tables).create(make_rule_body(query.id, for_s=30), base)

    def write(index: int, value: float) -> None:
        repo.upsert_results(
            [WindowResult(query.id, base + 10 * index, 10, {"avg": value}, 5, base)]
        )

    def alert() -> dict:
        return tables.current().get((rule.id, ""), {})

    with webhook_receiver() as hook:
        env = evaluator_env(alert_keyspace, webhook_url=hook.url)
        log = (tmp_path / "evaluator.log").open("ab")

        def start() -> subprocess.Popen:
            return start_evaluator(env, log)[0]

        def kill9(proc: subprocess.Popen) -> None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)

        def state() -> str | None:
            return (alert().get("latest") or {}).get("state")

        def delivered() -> bool:
            return not tables.pending("webhook")

        write(0, 85)
        write(1, 85)
        proc = start()
        try:
            wait_for(lambda: state() == "pending", "pending")
            kill9(proc)
            write(2, 85)  # the breach has lasted for_s: firing
            write(3, 85)
            proc = start()
            wait_for(lambda: state() == "firing" and len(hook.alerts()) == 1, "firing sent")
            wait_for(delivered, "the outbox emptied")
            kill9(proc)
            proc = start()
            time.sleep(2)  # a few cycles of the restarted evaluator over the firing alert
            write(4, 50)  # back to normal
            wait_for(lambda: state() == "normal" and len(hook.alerts()) == 2, "resolution sent")
            wait_for(delivered, "the outbox emptied")
            time.sleep(1)
        finally:
            proc.kill()
            proc.wait(timeout=30)

    statuses = [(a["status"], a["startsAt"]) for a in hook.alerts()]
    assert statuses == [("firing", base + 20), ("resolved", base + 20)]
    # The uninterrupted run: one fold over every window evaluated, with the final data.
    through = alert()["evaluated_through"]
    values = {0: 85.0, 1: 85.0, 2: 85.0, 3: 85.0, 4: 50.0}
    windows = [
        Observation(base + 10 * i, 10, values.get(i)) for i in range(int((through - base) / 10) + 1)
    ]
    expected, before = [], AlertState()
    for obs, st in zip(windows, fold(rule, AlertState(), windows), strict=True):
        if st.state != before.state:
            expected.append((obs.window_start, st.state))
        before = st
    recorded = [
        (r.window_start, r.state) for r in tables.history(rule.id, base, through + 10) if r.changed
    ]
    assert recorded == expected == [(base, "pending"), (base + 20, "firing"), (base + 40, "normal")]
