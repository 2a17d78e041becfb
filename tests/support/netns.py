"""Hosts as network namespaces in tests: :func:`require_netns` (the test fails, saying what is
missing, where namespaces or nftables are not available: never a silent skip), and
:class:`EchoHosts`, a tiny TCP echo inside each host of a tier, so that a test asks "does host
A reach host B by name now?" and gets the address it reached and the host that answered."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from types import TracebackType
from typing import Any

import pytest

from launch.cluster.hosts import Hosts

__all__ = ["ECHO_PORT", "EchoHosts", "require_netns"]

ECHO_PORT = 4242  # every host has its own network: one port for all of them

# Inside a host: listen on its own address (its name, through the tier's hosts file) and
# answer every connection with the host's name.
_SERVER = """
import json, socket, sys
name = sys.argv[1]
server = socket.create_server((socket.gethostbyname(name), int(sys.argv[2])))
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    with conn:
        conn.settimeout(2)
        try:
            conn.recv(64)
            conn.sendall(json.dumps({"by": name}).encode())
        except OSError:
            pass
"""

# Inside a host: connect to each named host and say what came back (or why nothing did).
_CLIENT = """
import json, socket, sys
port, timeout = int(sys.argv[1]), float(sys.argv[2])
out = {}
for name in sys.argv[3:]:
    try:
        with socket.create_connection((name, port), timeout=timeout) as conn:
            conn.sendall(b"ping")
            answer = json.loads(conn.recv(256))
            out[name] = {"ok": True, "address": conn.getpeername()[0], "by": answer["by"]}
    except OSError as exc:
        out[name] = {"ok": False, "error": type(exc).__name__}
print(json.dumps(out))
"""


def require_netns() -> None:
    """Fails the calling test unless this process can make namespaces and filter in them."""
    from launch.cluster.faults import supported

    if os.geteuid() != 0:
        pytest.fail("network namespaces need root (ip netns): run the cluster tier as root")
    missing = [tool for tool in ("ip", "nft") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not installed: apt-get install iproute2 nftables")
    if not supported()["partition"]:
        pytest.fail("nftables does not work inside a network namespace on this kernel")


class EchoHosts:
    """A tier of hosts, each running the echo; ``with`` brings them up and removes them."""

    def __init__(self, hosts: Hosts) -> None:
        self.hosts = hosts
        self.servers: list[subprocess.Popen[str]] = []

    def __enter__(self) -> EchoHosts:
        self.hosts.up()
        try:
            for name in self.hosts.hosts:
                argv = [sys.executable, "-c", _SERVER, name, str(ECHO_PORT)]
                proc = self.hosts.popen(name, argv, stdout=subprocess.PIPE, text=True)
                self.servers.append(proc)
                assert proc.stdout is not None
                line = proc.stdout.readline()
                assert line.strip() == "ready", f"the echo in {name} did not start: {line!r}"
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def reach(self, source: str, targets: list[str], timeout_s: float = 1.0) -> dict[str, Any]:
        """From inside ``source``: for each target, ``{"ok": True, "address", "by"}`` or
        ``{"ok": False, "error"}`` (a cut shows as a timeout: packets are dropped)."""
        argv = [sys.executable, "-c", _CLIENT, str(ECHO_PORT), str(timeout_s), *targets]
        done = self.hosts.run(source, argv, timeout=30 + timeout_s * len(targets))
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    def reaches(self, source: str, target: str) -> bool:
        return bool(self.reach(source, [target])[target]["ok"])

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for proc in self.servers:
            proc.kill()
            proc.wait(10)
            if proc.stdout:
                proc.stdout.close()
        self.hosts.down()
