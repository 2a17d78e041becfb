"""API tokens against the real app and the real Cassandra, made by ``apm token`` itself: a
viewer token reads the REST and Prometheus APIs (Bearer, and Basic as Grafana sends it) and
its writes are 403; an editor token writes; a revoked token is 401 within the few seconds of
the check cache; ``apm token list`` shows the last use and never the token."""

from __future__ import annotations

import io
import time
import uuid
from typing import Any

import httpx
import pytest

from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory
from storage.users import UserStore

pytestmark = pytest.mark.integration

PW = "long enough password"


@pytest.fixture
def cli(repo: Any, stack: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Any:
    """Runs ``apm ARGS`` on the served app's keyspace: (exit code, stdout, stderr)."""
    from apm.cli import main

    monkeypatch.setenv("APM_STORAGE_HOSTS", stack.host)
    monkeypatch.setenv("APM_STORAGE_PORT", str(stack.cassandra_port))
    monkeypatch.setenv("APM_STORAGE_KEYSPACE", repo.keyspace)

    def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def user(repo: Any) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    UserDirectory(UserStore(repo.session, repo.keyspace), DashboardTelemetry()).add(
        name, "editor", PW
    )
    return name


def _client(served: Any, **kw: Any) -> httpx.Client:
    # An address of its own: wrong tokens take from the login bucket of their client.
    transport = httpx.HTTPTransport(local_address="127.0.0.39")
    return httpx.Client(base_url=served.url, timeout=30, transport=transport, **kw)


def test_a_viewer_token_reads_and_is_refused_writes(served: Any, user: str, cli: Any) -> None:
    code, token, err = cli("token", "create", "--user", user, "--role", "viewer", "--label", "gf")
    assert code == 0, err
    token = token.strip()
    assert token.startswith("apm_") and "shown only now" in err
    with _client(served, headers={"Authorization": f"Bearer {token}"}) as client:
        assert client.get("/api/queries").status_code == 200
        assert client.get("/api/v1/labels").status_code == 200
        refused = client.post(
            "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}
        )
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    code, listed, _ = cli("token", "list", "--user", user)
    assert code == 0 and token not in listed and '"label": "gf"' in listed
    assert '"last_used_at": null' not in listed
    with _client(served, auth=(user, token)) as grafana:  # Basic, as a Grafana data source
        assert grafana.get("/api/v1/labels").status_code == 200
        assert cli("token", "revoke", token.split("_")[1])[0] == 0
        # Not among the remembered Basic credentials: refused within the token check's 5 s.
        deadline = time.monotonic() + 15
        while grafana.get("/api/v1/labels").status_code != 401:
            assert time.monotonic() < deadline, "the revocation never reached Basic auth"
            time.sleep(0.5)


def test_an_editor_token_writes_and_a_revoked_one_is_401(served: Any, user: str, cli: Any) -> None:
    code, token, _ = cli("token", "create", "--user", user, "--expires", "1d")
    token = token.strip()
    with _client(served, headers={"Authorization": f"Bearer {token}"}) as client:
        made = client.post("/api/queries", json={"text": "FROM * SELECT io WINDOW 10s COMPUTE max"})
        assert made.status_code == 201, made.text
        assert client.delete(f"/api/queries/{made.json()['id']}").status_code == 204
        code, _, err = cli("token", "revoke", token.split("_")[1])
        assert code == 0, err
        deadline = time.monotonic() + 15  # the app re-checks a token within its cache's 5 s
        while (answer := client.get("/api/queries")).status_code != 401:
            assert time.monotonic() < deadline, "the revocation never reached the app"
            time.sleep(0.5)
        assert answer.json()["error"] == "unauthorized"


def test_apm_token_refuses_bad_input_with_the_reason(user: str, cli: Any) -> None:
    assert cli("token", "create", "--user", user, "--role", "admin")[0] == 2  # above editor
    code, _, err = cli("token", "create", "--user", user, "--expires", "30y")
    assert code == 2 and "bad expiry" in err
    code, _, err = cli("token", "create", "--user", "nobody-" + user)
    assert code == 1 and "no enabled user" in err
    assert cli("token", "revoke", "0" * 16)[0] == 1
    assert cli("token", "revoke", "nope")[0] == 2
