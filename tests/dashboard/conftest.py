"""Dashboard fixtures: a real Repository in a private keyspace, the app served on a free port by
a real WSGI server, a real Prometheus endpoint standing in for the ingest's, and headless
Debian Chromium driven by selenium."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.keyspaces import scratch_keyspace

TOKEN = "test-token-Hd4Kw9Xs2Mq7Fv3Bn8Lt6"
USER, PASSWORD = "ops", "correct horse battery staple"


@pytest.fixture(scope="session")
def dash_keyspace(cassandra_session: Any) -> Iterator[str]:
    # Only a name: the repository below creates it.
    with scratch_keyspace(cassandra_session, "apm_dash", migrated=False) as name:
        yield name


@pytest.fixture(scope="session")
def repo(stack: Any, dash_keyspace: str) -> Iterator[Any]:
    from storage.repository import Repository
    from storage.settings import StorageSettings

    settings = StorageSettings.model_validate(
        {"hosts": stack.host, "port": stack.cassandra_port, "keyspace": dash_keyspace}
    )
    repository = Repository.connect(settings)
    yield repository
    repository.close()


@pytest.fixture(scope="session")
def ingest_endpoint() -> Iterator[tuple[str, Any]]:
    """A real Prometheus exposition endpoint with the ingest's counters."""
    from prometheus_client import CollectorRegistry, Counter, start_http_server

    registry = CollectorRegistry()
    # The ingest's own names (ingest/telemetry.py): samples and requests by outcome and reason.
    samples = Counter("apm_ingest_samples", "samples", ["outcome", "reason"], registry=registry)
    requests = Counter("apm_ingest_requests", "requests", ["outcome", "reason"], registry=registry)
    samples.labels("accepted", "ok").inc(1000)
    requests.labels("accepted", "ok").inc(10)
    requests.labels("rejected", "bad_value").inc(7)
    requests.labels("rejected", "bad_server").inc(2)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    yield f"http://127.0.0.1:{server.server_port}/metrics", (samples, requests)
    server.shutdown()
    thread.join(5)


@dataclass
class Served:
    url: str
    ctx: Any
    app: Any


@pytest.fixture(scope="session")
def evaluator_metrics() -> Iterator[tuple[str, Any]]:
    """The alert evaluator's real telemetry registry served as its /metrics is (the health
    page's receivers card reads it); tests set its counters."""
    from prometheus_client import make_wsgi_app
    from werkzeug.serving import make_server

    from alerting.telemetry import AlertingTelemetry

    telemetry = AlertingTelemetry()
    server = make_server("127.0.0.1", 0, make_wsgi_app(telemetry.registry), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.port}/metrics", telemetry
    server.shutdown()
    thread.join(5)


@pytest.fixture(scope="session")
def served(
    repo: Any,
    kafka_bootstrap: str,
    ingest_endpoint: tuple[str, Any],
    evaluator_metrics: tuple[str, Any],
) -> Iterator[Served]:
    from werkzeug.security import generate_password_hash
    from werkzeug.serving import make_server

    from dashboard.app import build_context, create_app
    from dashboard.settings import DashboardSettings

    settings = DashboardSettings(
        port=0,
        user=USER,
        password_hash=generate_password_hash(PASSWORD),
        token=TOKEN,
        kafka_bootstrap=kafka_bootstrap,
        ingest_metrics_urls=ingest_endpoint[0],
        alerting_metrics_url=evaluator_metrics[0],
        topics_cache_seconds=0,
        # Longer than a browser test takes from publishing to reading (the read is cached 10 s).
        agents_lookback_seconds=120,
        refresh_seconds=2.0,
        max_points=1200,
        # Every browser test signs in from 127.0.0.1; the throttle itself is test_auth.py's.
        login_client_burst=50,
    )
    ctx = build_context(settings, repo=repo)
    app = create_app(ctx)
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Served(f"http://127.0.0.1:{server.port}", ctx, app)
    server.shutdown()
    thread.join(5)


@pytest.fixture(scope="session")
def chrome() -> Iterator[Any]:
    from bench.browser import headless_chromium

    profile = tempfile.mkdtemp(prefix="apm-dash-chrome-")
    try:
        driver = headless_chromium(profile, "1400,1000")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def wait(chrome: Any) -> Callable[..., Any]:
    """wait(condition, timeout=20): polls ``condition(driver)`` until truthy.

    An element that Dash re-renders between being found and being read is stale: that poll
    counts as not yet, like an element not there yet (it failed a CI run)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    def run(condition: Callable[[Any], Any], timeout: float = 20.0) -> Any:
        return WebDriverWait(
            chrome,
            timeout,
            poll_frequency=0.1,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(condition)

    return run


@pytest.fixture
def login(chrome: Any, served: Served, wait: Callable[..., Any]) -> Callable[..., None]:
    from selenium.webdriver.common.by import By

    def run(user: str = USER, password: str = PASSWORD, path: str = "/") -> None:
        chrome.get(served.url + path)
        wait(lambda d: d.find_elements(By.ID, "login-form") or d.find_elements(By.ID, "page"))
        if chrome.find_elements(By.ID, "login-form"):
            chrome.find_element(By.ID, "user").send_keys(user)
            chrome.find_element(By.ID, "password").send_keys(password)
            chrome.find_element(By.ID, "login-submit").click()
        wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#page .nav"))

    return run


@pytest.fixture
def api(served: Served) -> Iterator[Any]:
    """An HTTP client of the served app, signed with the API token."""
    import httpx

    with httpx.Client(
        base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    ) as client:
        yield client
