"""Starts the dashboard as a background process for ``apm run`` / ``make run``."""

from __future__ import annotations

import os
import secrets
import sys
import urllib.request
from pathlib import Path

from apm.stack.supervisor import ManagedProcess, StartError

__all__ = ["start_dashboard"]

MARKER = "dashboard.serve"


def _healthy(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start_dashboard(home: Path, port: int = 8050, host: str = "127.0.0.1",
                    env: dict[str, str] | None = None, timeout_s: float = 60.0
                    ) -> ManagedProcess:
    """Starts ``python -m dashboard.serve`` (or finds it running) and waits for /healthz.
    Without configured credentials it creates a token in ``home/dashboard.token`` (mode 600)
    and uses it: sign in with any user name and that token as the password."""
    proc = ManagedProcess("dashboard", Path(home), MARKER)
    if proc.pid() is not None:
        return proc
    merged = {**os.environ, **(env or {})}
    extra = dict(env or {})
    if not merged.get("APM_DASHBOARD_TOKEN") and not merged.get("APM_DASHBOARD_PASSWORD_HASH"):
        token_file = Path(home) / "dashboard.token"
        if not token_file.exists():
            token_file.parent.mkdir(parents=True, exist_ok=True)
            token_file.touch(mode=0o600)
            token_file.write_text(secrets.token_urlsafe(24) + "\n")
        extra["APM_DASHBOARD_TOKEN"] = token_file.read_text().strip()
    proc.start([sys.executable, "-m", MARKER, "--host", host, "--port", str(port)], env=extra)
    try:
        proc.wait_healthy(lambda: _healthy(host, port), timeout_s)
    except StartError:
        proc.stop()
        raise
    return proc
