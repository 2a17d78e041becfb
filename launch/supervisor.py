"""Starts, watches and stops background processes through pid files, with health waits.

Used for the engines (``apm stack``) and for the platform's own services under ``make run``.
A pid file whose process is gone, or now belongs to another program, counts as stale.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ManagedProcess", "StartError", "port_in_use"]


class StartError(RuntimeError):
    """A process could not be started or did not become healthy; says why and where the log is."""


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


@dataclass
class ManagedProcess:
    """One long-running process: its pid file, log, and the marker that proves it is ours."""

    name: str
    home: Path
    marker: str  # a string in the command line that identifies this process

    @property
    def pidfile(self) -> Path:
        return self.home / f"{self.name}.pid"

    @property
    def log(self) -> Path:
        return self.home / f"{self.name}.log"

    def pid(self) -> int | None:
        """The live pid of this process, or None (removing a stale pid file)."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        if self.marker in _cmdline(pid):
            return pid
        self.pidfile.unlink(missing_ok=True)
        return None

    def start(
        self, command: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> int:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            proc = subprocess.Popen(
                list(command),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        # Until exec() runs, /proc/<pid>/cmdline shows our own command line, and pid() would
        # take the new process for a stranger; wait for the exec (or an early exit).
        deadline = time.monotonic() + 10
        while (
            proc.poll() is None
            and self.marker not in _cmdline(proc.pid)
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        self.pidfile.write_text(str(proc.pid))
        return proc.pid

    def tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def wait_healthy(
        self,
        healthy: Callable[[], bool],
        timeout_s: float,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        deadline = time.monotonic() + timeout_s
        started = time.monotonic()
        last_note = 0.0
        while True:
            if self.pid() is None:
                raise StartError(
                    f"{self.name} exited during start-up; log: {self.log}\n{self.tail()}"
                )
            if healthy():
                return
            now = time.monotonic()
            if now > deadline:
                raise StartError(f"{self.name} not healthy after {timeout_s:.0f}s; log: {self.log}")
            if progress and now - last_note >= 5:
                progress(f"waiting for {self.name} ({now - started:.0f}s)")
                last_note = now
            time.sleep(0.5)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """SIGTERM, then SIGKILL after the timeout. True when something was running."""
        pid = self.pid()
        if pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.marker in _cmdline(pid):
            _reap(pid)
            time.sleep(0.2)
        if self.marker in _cmdline(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            time.sleep(0.5)
        _reap(pid)
        self.pidfile.unlink(missing_ok=True)
        return True


def _reap(pid: int) -> None:
    # Our own children become zombies until waited for; zombies keep /proc/<pid>/cmdline empty.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
