"""``make bench-agent``, the package part: the .deb's size, its installed size, and the packaged
agent's CPU and RSS at 1 Hz on a clean bookworm root (made by ``python -m
tests.support.cleanhost``, the package installed there with dpkg -i).

The agent runs as the unit says (its ExecStart, User, Environment, UMask) in the root through
chroot, in its own PID, mount and UTS namespaces, pushing over loopback to an HTTP sink that
answers 202; StatsD off, as in bench.agent's host figure, so that the two compare."""

from __future__ import annotations

import http.server
import os
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil

from bench.process_sample import Sink, cpu_and_rss

__all__ = ["bench_package"]


def _service(unit: Path) -> dict[str, list[str]]:
    service: dict[str, list[str]] = {}
    section = ""
    for line in unit.read_text().splitlines():
        if line.startswith("["):
            section = line.strip()
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            name, value = line.split("=", 1)
            service.setdefault(name, []).append(value)
    return service


def _agent_process(launcher: psutil.Process, timeout_s: float = 30) -> psutil.Process:
    """The agent's python among the launcher's descendants (the namespaces' helpers exec)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in launcher.children(recursive=True):
            try:
                if child.name().startswith("python"):
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.2)
    raise RuntimeError("the agent's python never started in the clean root")


def bench_package(deb: Path, root: Path, seconds: float) -> dict[str, float]:
    installed_kib = float(
        subprocess.run(
            ["chroot", str(root), "dpkg-query", "-W", "-f=${Installed-Size}", "apm-agent"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    du_kib = float(
        subprocess.run(
            ["du", "-sk", str(root / "opt" / "apm-agent")], capture_output=True, text=True
        ).stdout.split()[0]
    )
    service = _service(root / "lib" / "systemd" / "system" / "apm-agent.service")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        **dict(e.split("=", 1) for e in service["Environment"]),
        "APM_AGENT_INGEST_URL": f"http://127.0.0.1:{server.server_address[1]}/v1/metrics",
        "APM_AGENT_API_KEY": "bench",
        "APM_AGENT_STATSD_ENABLED": "0",
    }
    user = service["User"][0]
    inner = ["chroot", str(root), "env", "-i", *(f"{k}={v}" for k, v in env.items())]
    inner += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]
    inner += shlex.split(service["ExecStart"][0])
    argv = ["unshare", "--uts", "--mount", "--pid", "--fork", "--kill-child"]
    argv += [f"--mount-proc={root / 'proc'}", "sh", "-c", f"umask {service['UMask'][0]}"]
    argv[-1] += ' && exec "$@"'
    argv += ["sh", *inner]
    launcher = subprocess.Popen(argv, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        agent = _agent_process(psutil.Process(launcher.pid))
        figures = cpu_and_rss(agent, seconds, "packaged agent")
    finally:
        os.killpg(launcher.pid, signal.SIGTERM)
        launcher.wait(15)
        server.shutdown()
    return {
        "deb_mib": deb.stat().st_size / 2**20,
        "installed_mib": installed_kib / 1024,
        "opt_mib": du_kib / 1024,
        **figures,
    }
