"""API keys: a file of salted hashes, checked in constant time, reloaded when it changes.

A key is ``<key id>.<secret>``. The file holds one line per key::

    # comments and blank lines are ignored
    <key id> <salt hex> <sha256(salt + secret) hex> [label...]

The secret is 256 random bits, so a fast salted hash is enough (no password-style KDF).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import threading
from pathlib import Path
from typing import NamedTuple

__all__ = ["KeyFile", "KeyFileError", "add_key", "append_line", "hash_line", "new_key"]

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
    """The accepted keys, re-read when the file's mtime or size changes (no restart needed)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
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
        with self._lock:
            self._entries = _parse(self.path.read_text(), self.path)
            self._stamp = stamp

    def check(self, key: str | None) -> bool:
        if self.path is None or not key:
            return False
        # A bad edit keeps the last good set rather than locking everyone out.
        with contextlib.suppress(KeyFileError):
            self._reload()
        key_id, _, secret = key.partition(".")
        entry = self._entries.get(key_id)
        salt, digest = entry if entry is not None else _DUMMY
        # Hash and compare even for an unknown id, so timing does not reveal which ids exist.
        same = hmac.compare_digest(_digest(salt, secret), digest)
        return entry is not None and same
