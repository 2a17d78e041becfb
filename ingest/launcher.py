"""Start a real ingest process for tests and benchmarks of other components.

    from ingest.auth import add_key
    from ingest.launcher import start_ingest, free_port

    key = add_key(tmp_path / "keys")            # a key file with one fresh key
    proc = start_ingest(free_port(), tmp_path / "keys", kafka_bootstrap, tmp_path)
    ...  # POST to http://127.0.0.1:<port>/v1/metrics with "Authorization: Bearer <key>"
    proc.stop()                                 # SIGTERM: drains, flushes, exits
"""

from __future__ import annotations

import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

from apm.stack.supervisor import ManagedProcess

__all__ = ["free_port", "ingest_url", "is_ready", "start_ingest"]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ingest_url(port: int, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{port}"


def is_ready(port: int, host: str = "127.0.0.1", timeout_s: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(f"{ingest_url(port, host)}/readyz",
                                    timeout=timeout_s) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_ingest(port: int, keys_file: Path, kafka_bootstrap: str, home: Path,
                 host: str = "127.0.0.1", env: dict[str, str] | None = None,
                 timeout_s: float = 60.0, wait_ready: bool = True) -> ManagedProcess:
    """Runs ``apm ingest serve`` in the background (pid file and log in ``home``) and waits
    until /readyz answers 200 (Kafka reachable). ``env`` adds APM_INGEST_* overrides."""
    marker = f"ingest serve --host {host} --port {port} "
    proc = ManagedProcess(f"ingest-{port}", Path(home), marker=marker)
    proc.start([sys.executable, "-m", "apm.cli", "ingest", "serve", "--host", host,
                "--port", str(port), "--keys-file", str(keys_file),
                "--kafka-bootstrap", kafka_bootstrap], env=env)
    if wait_ready:
        try:
            proc.wait_healthy(lambda: is_ready(port, host, 2.0), timeout_s)
        except BaseException:
            proc.stop(10)
            raise
    return proc
