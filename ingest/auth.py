"""API keys: a file of salted hashes, checked in constant time, reloaded when it changes.

A key is ``<key id>.<secret>``. The file holds one line per key::

    # comments and blank lines are ignored
    <key id> <salt hex> <sha256(salt + secret) hex> [label...]

The secret is 256 random bits, so a fast salted hash is enough (no password-style KDF).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

__all__ = ["KeyFile", "KeyFileError", "add_key", "append_line", "hash_line", "new_key"]

log = logging.getLogger(__name__)

_DUMMY = (b"\0" * 16, "0" * 64)


class KeyFileError(ValueError):
    """The key file cannot be read or a line is malformed; says which line."""


class _Entry(NamedTuple):
    salt: bytes
    digest: str


def _digest(salt: bytes, secret: str) -> str:
    return hashlib.sha256(salt + secret.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A fresh key and its key-file line (without label)."""
    key_id = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    key = f"{key_id}.{secret}"
    return key, hash_line(key)


def hash_line(key: str, label: str = "") -> str:
    key_id, _, secret = key.partition(".")
    salt = secrets.token_bytes(16)
    line = f"{key_id} {salt.hex()} {_digest(salt, secret)}"
    return f"{line} {label}".rstrip()


def add_key(path: Path, label: str = "") -> str:
    """Creates a key, appends its line to ``path`` (created 0600 if missing), returns the key.
    The helper for tests and operators that need a working key file."""
    key, _ = new_key()
    append_line(path, hash_line(key, label))
    return key


def append_line(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as handle:
        handle.write(line + "\n")


def _parse(text: str, path: Path) -> dict[str, _Entry]:
    entries: dict[str, _Entry] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            key_id, salt_hex, digest = parts[0], parts[1], parts[2]
            salt = bytes.fromhex(salt_hex)
            if len(digest) != 64:
                raise ValueError
            int(digest, 16)
        except (IndexError, ValueError):
            raise KeyFileError(
                f"{path}:{number}: expected '<key id> <salt hex> <sha256 hex> [label]'"
            ) from None
        entries[key_id] = _Entry(salt, digest.lower())
    return entries


class KeyFile:
    """The accepted keys, re-read when the file's mtime or size changes (no restart needed).

    The file is the list of valid keys, so a file that disappears revokes them all (every
    request gets 401) and says so in the log at ERROR; keys come back with the file. A bad
    edit (a malformed line) keeps the last good set, also logged at ERROR. The file is
    stat'ed at most every ``recheck_s`` seconds, so a check costs no I/O on the hot path.
    """

    def __init__(
        self,
        path: Path | None,
        recheck_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.recheck_s = recheck_s
        self.clock = clock
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._checked = -math.inf
        self._problem: str | None = None  # what was last logged, so it is logged once
        if path is not None:
            self._reload()

    def _reload(self) -> None:
        assert self.path is not None
        try:
            stat = self.path.stat()
        except OSError as exc:
            raise KeyFileError(f"cannot read the API key file {self.path}: {exc}") from exc
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        entries = _parse(self.path.read_text(), self.path)
        with self._lock:
            self._entries = entries
            self._stamp = stamp

    def _refresh(self) -> None:
        now = self.clock()
        if now - self._checked < self.recheck_s:
            return
        self._checked = now
        try:
            self._reload()
        except KeyFileError as exc:
            if self.path is not None and not self.path.exists():
                with self._lock:  # revoke: a deleted key file must not keep its keys
                    revoked, self._entries, self._stamp = len(self._entries), {}, None
                if revoked or self._problem != str(exc):
                    log.error("%s: all %d API keys revoked until it is back", exc, revoked)
            elif self._problem != str(exc):
                log.error("%s; keeping the last good set of %d keys", exc, len(self._entries))
            self._problem = str(exc)
            return
        if self._problem is not None:
            log.warning("API key file %s read again: %d keys", self.path, len(self._entries))
            self._problem = None

    def __len__(self) -> int:
        return len(self._entries)

    def check(self, key: str | None) -> bool:
        if self.path is None or not key:
            return False
        self._refresh()
        key_id, _, secret = key.partition(".")
        entry = self._entries.get(key_id)
        salt, digest = entry if entry is not None else _DUMMY
        # Hash and compare even for an unknown id, so timing does not reveal which ids exist.
        same = hmac.compare_digest(_digest(salt, secret), digest)
        return entry is not None and same
