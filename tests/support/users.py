"""An in-memory stand-in for storage.users.UserStore with the same edges (add refuses an
existing name, a change of a missing user is False, list by name), for unit tests of the
users' logic; tests/storage/test_users.py holds both to the same contract."""

from __future__ import annotations

from dataclasses import replace

from storage.users import StoredUser

__all__ = ["MemoryUsers"]


class MemoryUsers:
    def __init__(self) -> None:
        self.users: dict[str, StoredUser] = {}
        self.down = False  # True: every call fails as an unreachable Cassandra would
        self.reads = 0

    def _check(self) -> None:
        if self.down:
            from cassandra.cluster import NoHostAvailable

            raise NoHostAvailable("down (test)", {})

    def add(self, name: str, role: str, password_hash: str, now: float) -> bool:
        self._check()
        if name in self.users:
            return False
        self.users[name] = StoredUser(name, role, password_hash, False, now, now)
        return True

    def get(self, name: str) -> StoredUser | None:
        self._check()
        self.reads += 1
        return self.users.get(name)

    def list(self) -> list[StoredUser]:
        self._check()
        return sorted(self.users.values(), key=lambda u: u.name)

    def set_role(self, name: str, role: str, now: float) -> bool:
        self._check()
        if name not in self.users:
            return False
        self.users[name] = replace(self.users[name], role=role, updated_at=now)
        return True

    def set_disabled(self, name: str, disabled: bool, now: float) -> bool:
        self._check()
        if name not in self.users:
            return False
        self.users[name] = replace(self.users[name], disabled=disabled, updated_at=now)
        return True
