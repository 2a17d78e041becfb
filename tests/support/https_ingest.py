"""The ingest app serving HTTPS with a certificate from a test's own CA (tests.support.certs),
on the real Kafka, in a thread of the test process: its real publisher, auth and TLS hook.
Used by the agent's TLS tests and by the remote_write-over-HTTPS test with Debian's Prometheus.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.support.certs import Ca
from tests.support.http import uvicorn_thread

__all__ = ["StartIngest", "https_ingests"]

# (ca, client_ca=None, cn="localhost", client_auth="beside_key") -> (the https URL of
# /v1/metrics by that name, API key)
StartIngest = Callable[..., tuple[str, str]]


@contextlib.contextmanager
def https_ingests(tmp_path: Path, kafka_bootstrap: str) -> Iterator[StartIngest]:
    """Starts ingests on demand, each stopped when the block ends."""
    from ingest.app import create_app
    from ingest.auth import add_key
    from ingest.cli import tls_context_factory
    from ingest.settings import IngestSettings

    with contextlib.ExitStack() as running:

        def start(
            ca: Ca,
            client_ca: Path | None = None,
            cn: str = "localhost",
            client_auth: str = "beside_key",
        ) -> tuple[str, str]:
            n = len(list(tmp_path.glob("keys*")))
            cert, key = ca.issue(f"ingest{n}", cn=cn)
            keys = tmp_path / f"keys{n}"
            api_key = add_key(keys, "agent")
            settings = IngestSettings(
                keys_file=keys,
                kafka_bootstrap=kafka_bootstrap,
                tls_cert=cert,
                tls_key=key,
                tls_client_ca=client_ca,
                tls_client_auth=client_auth,
            )
            port = running.enter_context(
                uvicorn_thread(
                    create_app(settings),
                    lifespan="on",
                    ssl_context_factory=tls_context_factory(settings),
                )
            )
            return f"https://localhost:{port}/v1/metrics", api_key

        yield start
