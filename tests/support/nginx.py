"""Debian's nginx in front of something a test serves: the test gives the ``server { ... }``
block, this writes the rest of the configuration (everything under the test's directory,
nothing read from /etc/nginx) and runs nginx in the foreground with the command the cluster's
load balancer uses (:func:`launch.cluster.nginx.command`), stopped when the block ends."""

from __future__ import annotations

import getpass
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from launch.cluster.nginx import LbConfig, command
from tests.support.debs import require

__all__ = ["running_nginx"]

_TEMPS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def _config(home: Path, server: str) -> str:
    temps = "\n".join(f"    {kind}_temp_path {home / 'tmp' / kind};" for kind in _TEMPS)
    # As root, nginx's workers would run as nobody and could not read the test's files; as
    # anyone else the directive is ignored (a warning in the error log).
    return f"""user {getpass.getuser()};
worker_processes 1;
pid {home / "nginx.pid"};
error_log {home / "error.log"} warn;
events {{
    worker_connections 256;
}}
http {{
    access_log {home / "access.log"};
{temps}
{server}
}}
"""


@contextmanager
def running_nginx(home: Path, listen: tuple[str, int], server: str) -> Iterator[Path]:
    """nginx serving ``server`` (which listens on ``listen``) until the block ends; yields its
    home (``error.log`` and ``access.log`` are there). Fails naming the error log when nginx
    does not start or does not listen within 30 s."""
    binary = require("nginx", "nginx")
    for kind in _TEMPS:
        (home / "tmp" / kind).mkdir(parents=True, exist_ok=True)
    cfg = LbConfig(listen[0], listen[1], [], home)  # command() reads only its home and conf
    cfg.conf.write_text(_config(home, server))
    log = (home / "nginx.out").open("wb")
    proc = subprocess.Popen(command(cfg, binary), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                errors = (home / "error.log").read_text() if (home / "error.log").exists() else ""
                out = (home / "nginx.out").read_text()
                raise RuntimeError(f"nginx did not start on {listen}: {out}\n{errors}")
            try:
                socket.create_connection(listen, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield home
    finally:
        proc.terminate()  # SIGTERM: nginx's fast shutdown
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
