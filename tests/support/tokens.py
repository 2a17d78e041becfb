"""An in-memory stand-in for storage.tokens.TokenStore with the same edges (add refuses a
taken id, a revocation of a missing token is False, list oldest first, last use kept), for unit
tests of the tokens' logic; tests/storage/test_tokens.py holds both to the same contract."""

from __future__ import annotations

from dataclasses import replace

from storage.tokens import StoredToken

__all__ = ["MemoryTokens"]


class MemoryTokens:
    def __init__(self) -> None:
        self.tokens: dict[str, StoredToken] = {}
        self.touches = 0

    def add(self, token: StoredToken) -> bool:
        if token.id in self.tokens:
            return False
        self.tokens[token.id] = replace(token, revoked_at=None, last_used_at=None)
        return True

    def get(self, token_id: str) -> StoredToken | None:
        return self.tokens.get(token_id)

    def list(self) -> list[StoredToken]:
        return sorted(self.tokens.values(), key=lambda t: (t.created_at, t.id))

    def revoke(self, token_id: str, now: float) -> bool:
        if token_id not in self.tokens:
            return False
        self.tokens[token_id] = replace(self.tokens[token_id], revoked_at=now)
        return True

    def touch(self, token_id: str, now: float) -> None:
        self.touches += 1
        self.tokens[token_id] = replace(self.tokens[token_id], last_used_at=now)
