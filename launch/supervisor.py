"""Starts, watches and stops background processes through pid files, with health waits.

Used for the engines (``apm stack``) and for the platform's own services under ``make run``.
A pid file whose process is gone, or now belongs to another program, counts as stale.
Stopping is bounded: SIGTERM, then SIGKILL once the grace period has passed; how a process
ended (``last_stop``: exited on its own, or killed) and, for our own children, its exit status
(``returncode``) are recorded, so a test can tell a graceful exit from a kill.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["ManagedProcess", "StartError", "port_in_use", "stop_all"]

StopOutcome = Literal["exited", "killed"]


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
    # How the last stop() ended: "exited" after SIGTERM within the grace, or "killed".
    last_stop: StopOutcome | None = field(default=None, init=False, compare=False)
    # The exit status when this object started the process (else None); -9 after a SIGKILL.
    returncode: int | None = field(default=None, init=False, compare=False)
    _popen: subprocess.Popen[bytes] | None = field(
        default=None, init=False, repr=False, compare=False
    )

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
        # Kept, so that our own child is reaped here (its exit status recorded) and not by
        # subprocess's cleanup of forgotten Popen objects.
        self._popen = proc
        self.returncode = None
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

    def terminate(self) -> int | None:
        """Sends SIGTERM to the process group; the pid it went to, or None (nothing runs)."""
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
        return pid

    def gone(self, pid: int) -> bool:
        """True once ``pid`` (this process) has exited; reaps it when it is our child."""
        if self._popen is not None and self._popen.pid == pid:
            if self._popen.poll() is not None:
                self.returncode = self._popen.returncode
                return True
            return False
        _reap(pid)
        return self.marker not in _cmdline(pid)

    def finish(self, pid: int) -> StopOutcome:
        """After the grace: SIGKILL if still there; records and returns how it ended."""
        outcome: StopOutcome = "exited"
        if not self.gone(pid):
            outcome = "killed"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while not self.gone(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        self.pidfile.unlink(missing_ok=True)
        self.last_stop = outcome
        return outcome

    def stop(self, timeout_s: float = 30.0) -> bool:
        """SIGTERM, then SIGKILL after the timeout. True when something was running; how it
        ended is in ``last_stop`` (and ``returncode``)."""
        pid = self.terminate()
        if pid is None:
            return False
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.gone(pid):
            time.sleep(0.05)
        self.finish(pid)
        return True


def stop_all(
    processes: Sequence[ManagedProcess],
    grace_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, StopOutcome]:
    """Stops several processes within one bounded grace period: SIGTERM to each (in the order
    given), one shared wait of at most ``grace_s``, then SIGKILL to whichever still runs. So a
    component that ignores SIGTERM costs the grace once, never one grace per component."""
    sent = [(proc, pid) for proc in processes if (pid := proc.terminate()) is not None]
    deadline = clock() + grace_s
    while clock() < deadline and not all(proc.gone(pid) for proc, pid in sent):
        sleep(0.05)
    return {proc.name: proc.finish(pid) for proc, pid in sent}


def _reap(pid: int) -> None:
    # Our own children become zombies until waited for; zombies keep /proc/<pid>/cmdline empty.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
