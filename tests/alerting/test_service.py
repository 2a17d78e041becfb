"""Two evaluator processes on one keyspace: only the lease holder evaluates and sends; a
``kill -9`` of the holder while an alert is pending hands the lease to the other, which goes on
from the stored state: the transitions of an uninterrupted run, the firing sent once, its
resolution once."""

from __future__ import annotations

import math
import signal
import subprocess
import time
import urllib.request

import pytest

from alerting.rulebook import Rulebook
from alerting.service import LEASE
from tests.support.evaluator import evaluator_env, start_evaluator, wait_for
from tests.support.webhook import webhook_receiver

pytestmark = pytest.mark.integration


def _lease_held(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return "apm_alerting_lease_held 1.0" in answer.read().decode()


def test_kill9_of_the_lease_holder_fails_over(
    cassandra_session, own_keyspace, make_rule_body, tmp_path
):
    from apm.query import WindowResult
    from storage.alerts import AlertStore
    from storage.lease import Lease
    from storage.repository import Repository

    tables = AlertStore(cassandra_session, own_keyspace)
    lease = Lease(cassandra_session, own_keyspace, LEASE, "the test (reads only)", 2)
    base = math.floor(time.time() / 10) * 10 - 300.0
    repo = Repository(cassandra_session, own_keyspace, clock=lambda: base)
    query = repo.save_query("FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    rule = Rulebook(repo, tables).create(make_rule_body(query.id, for_s=30), base)

    def write(index: int, value: float) -> None:
        repo.upsert_results(
            [WindowResult(query.id, base + 10 * index, 10, {"avg": value}, 5, base)]
        )

    def state() -> str | None:
        return (tables.current().get((rule.id, ""), {}).get("latest") or {}).get("state")

    with webhook_receiver() as hook:
        env = evaluator_env(own_keyspace, webhook_url=hook.url, lease_ttl_s=3)
        log = (tmp_path / "evaluators.log").open("ab")

        def start() -> tuple[subprocess.Popen, int]:
            return start_evaluator(env, log)

        def holder_pid() -> int | None:
            held = lease.current()
            return None if held is None else int(held.split(":")[1])

        write(0, 85)
        write(1, 85)
        first, first_port = start()
        procs = [first]
        try:
            wait_for(lambda: holder_pid() == first.pid, "the first evaluator takes the lease")
            second, second_port = start()
            procs.append(second)
            wait_for(lambda: state() == "pending", "pending")
            time.sleep(2)  # the second one up and standing by
            assert _lease_held(first_port) and not _lease_held(second_port)
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
            write(2, 85)  # the breach has lasted for_s: firing, decided by the second one
            write(3, 85)
            wait_for(lambda: holder_pid() == second.pid, "the second evaluator takes over")
            wait_for(lambda: state() == "firing" and len(hook.alerts()) == 1, "firing sent")
            write(4, 50)
            wait_for(lambda: state() == "normal" and len(hook.alerts()) == 2, "resolution sent")
            time.sleep(1)  # a few more cycles: nothing sent again
        finally:
            for proc in procs:
                proc.kill()
                proc.wait(timeout=30)

    assert [(a["status"], a["startsAt"]) for a in hook.alerts()] == [
        ("firing", base + 20),
        ("resolved", base + 20),
    ]
    recorded = [
        (r.window_start - base, r.state)
        for r in tables.history(rule.id, base, base + 600)
        if r.changed
    ]
    assert recorded == [(0, "pending"), (20, "firing"), (40, "normal")]
