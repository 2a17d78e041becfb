"""``apm alert``: the evaluator and the Alertmanager of ``make run`` start from the process
table and answer; a refused rule exits 2 with the field named; ``apm alert edit`` replaces a
rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from launch import processes
from launch.probe import free_port
from tests.support.alertmanager import require_alertmanager

pytestmark = pytest.mark.integration


def test_make_runs_alertmanager_and_evaluator_start_and_stop(tmp_path, own_keyspace):
    require_alertmanager()
    am_port, metrics_port = free_port(), free_port()
    am = processes.alertmanager(tmp_path / "am", am_port)
    proc = am.start(tmp_path / "am-home", wait_s=30)
    try:
        assert am.ready()
        assert proc.pid() is not None  # the binary's command line carries the marker
        ev = processes.alerting(metrics_port, alertmanager_url=f"http://127.0.0.1:{am_port}")
        ev_proc = ev.start(
            tmp_path / "ev-home", env={"APM_STORAGE_KEYSPACE": own_keyspace}, wait_s=60
        )
        try:
            assert ev.ready()
        finally:
            ev_proc.stop(10)
    finally:
        proc.stop(10)
    assert proc.pid() is None


def test_a_refused_rule_exits_2_naming_the_field(alert_keyspace):
    rule = '{"name": "x", "query_id": "q", "function": "avg", "thresholds": {"warning": 1e999}}'
    done = subprocess.run(
        [sys.executable, "-m", "apm.cli", "alert", "add", rule],
        env={**os.environ, "APM_STORAGE_KEYSPACE": alert_keyspace},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "thresholds.warning: must be a finite number" in done.stderr


def test_edit_replaces_a_rule_and_exits_1_or_2_when_it_cannot(
    alert_keyspace, repo, tables, make_rule_body
):
    from alerting.rulebook import Rulebook

    qid = repo.save_query("FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg").id
    rule_id = Rulebook(repo, tables).create(make_rule_body(qid), 0).id

    def edit(target: str, warning: float) -> subprocess.CompletedProcess[str]:
        body = json.dumps(make_rule_body(qid, thresholds={"warning": warning}))
        return subprocess.run(
            [sys.executable, "-m", "apm.cli", "alert", "edit", target, body],
            env={**os.environ, "APM_STORAGE_KEYSPACE": alert_keyspace},
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = edit(rule_id, 95)
    assert done.returncode == 0, done.stderr
    assert tables.rules()[rule_id]["thresholds"]["warning"] == 95
    done = edit(rule_id, float("inf"))
    assert done.returncode == 2 and "thresholds.warning: must be a finite" in done.stderr
    assert edit("no-such-rule", 95).returncode == 1
    assert tables.rules()[rule_id]["thresholds"]["warning"] == 95


@pytest.mark.parametrize("command", ["run", "test-notify"])
def test_a_file_receiver_url_refuses_to_start_naming_the_variable(command):
    done = subprocess.run(
        [sys.executable, "-m", "apm.cli", "alert", command],
        env={**os.environ, "APM_ALERTING_WEBHOOK_URL": "file:///etc/passwd"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "APM_ALERTING_WEBHOOK_URL: Value error, receiver URL must be an http://" in done.stderr
    assert "Traceback" not in done.stderr
