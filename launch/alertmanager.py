"""Debian's ``prometheus-alertmanager`` for ``make run`` (and the tests' peer, which builds on
this): a config routing every alert to one receiver (a webhook when given, else none: the
alerts are then only listed in its UI and API), clustering off, on a loopback port.
``launch.processes.alertmanager`` runs the binary itself; no component starts it."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["BINARY", "arguments", "command", "write_config"]

BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")

_CONFIG = """\
route:
  receiver: default
  group_by: [alertname]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: default
{webhook}
"""


def write_config(workdir: Path, webhook_url: str = "") -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    hook = f"    webhook_configs:\n      - url: {webhook_url}\n" if webhook_url else ""
    path = workdir / "alertmanager.yml"
    path.write_text(_CONFIG.format(webhook=hook))
    return path


def arguments(workdir: Path, port: int) -> list[str]:
    """Its arguments (after the binary); the config they name is :func:`write_config`'s."""
    return [
        f"--config.file={workdir / 'alertmanager.yml'}",
        f"--storage.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
        "--log.level=warn",
    ]


def command(workdir: Path, port: int, webhook_url: str = "") -> list[str]:
    """The command line, after writing its config into ``workdir``."""
    if BINARY is None:
        raise FileNotFoundError("prometheus-alertmanager is not installed: run `make debs`")
    write_config(workdir, webhook_url)
    return [BINARY, *arguments(workdir, port)]
