"""The saved dashboards as the API, the pages and the share view use them: every write goes
through :func:`dashboard.boards.parse_board` (a refusal is a BoardError, nothing is stored),
with the stored query ids read once per write so that a panel naming a deleted or unknown
query is refused. Storage calls go through ``guarded`` (an outage is StorageUnavailable)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from apm.audit import NO_AUDIT, Recorder
from dashboard.boards import Board, BoardError, parse_board
from dashboard.guard import guarded
from dashboard.ports import QueryRepository
from dashboard.telemetry import DashboardTelemetry

__all__ = ["MAX_BOARD_ID_CHARS", "BoardBook", "NoBoard", "book_for"]

MAX_BOARD_ID_CHARS = 64  # ids are uuid4 strings
# secrets.token_urlsafe(32): 256 bits, past any guessing.
_TOKEN_BYTES = 32


class NoBoard(LookupError):
    """No dashboard by that id (a 404)."""


class BoardBook:
    def __init__(
        self,
        store: Any,
        repo: QueryRepository,
        telemetry: DashboardTelemetry,
        clock: Callable[[], float] = time.time,
        token: Callable[[], str] = lambda: secrets.token_urlsafe(_TOKEN_BYTES),
        audit: Recorder = NO_AUDIT,
    ) -> None:
        self.store, self.repo, self.telemetry, self.clock = store, repo, telemetry, clock
        self._token, self.audit = token, audit

    def _g(self, op: str, call: Callable[[], Any]) -> Any:
        return guarded(self.telemetry, op, call)

    def known_queries(self) -> set[str]:
        return {q.id for q in self._g("list_queries", self.repo.list_queries)}

    @staticmethod
    def _board(stored: Any) -> Board:
        # Stored bodies were validated on write; a query deleted since is the page's to explain.
        return _with_meta(parse_board(stored.body), stored)

    def list(self) -> list[Board]:
        return [self._board(s) for s in self._g("dashboards_list", self.store.list)]

    def get(self, board_id: str) -> Board:
        if len(board_id) > MAX_BOARD_ID_CHARS or not board_id.isprintable():
            raise NoBoard(board_id[:MAX_BOARD_ID_CHARS])
        stored = self._g("dashboards_get", lambda: self.store.get(board_id))
        if stored is None:
            raise NoBoard(board_id)
        return self._board(stored)

    def create(self, raw: object, *, importing: bool = False, name: str | None = None) -> Board:
        board = parse_board(raw, self.known_queries(), importing=importing, name=name)
        now = self.clock()
        stored = self._g("dashboards_create", lambda: self.store.create(board.body(), now))
        self.audit.record("dashboard", stored.id, "create", None, board.body())
        return _with_meta(board, stored)

    def update(self, board_id: str, raw: object) -> Board:
        self.get(board_id)
        board = parse_board(raw, self.known_queries())
        return self.save(board_id, board)

    def save(self, board_id: str, board: Board) -> Board:
        """Stores an already parsed board (the page's edits) under ``board_id``."""
        known = self.known_queries()
        for i, panel in enumerate(board.panels):
            for j, qid in enumerate(panel.queries):
                if qid not in known:
                    raise BoardError(f"no stored query {qid!r}", f"panels[{i}].queries[{j}]")
        before = self._g("dashboards_get", lambda: self.store.get(board_id))
        now = self.clock()
        if not self._g("dashboards_update", lambda: self.store.update(board_id, board.body(), now)):
            raise NoBoard(board_id)
        self.audit.record("dashboard", board_id, "update", before and before.body, board.body())
        return self.get(board_id)

    def delete(self, board_id: str) -> None:
        before = self.get(board_id)
        if not self._g("dashboards_delete", lambda: self.store.delete(board_id)):
            raise NoBoard(board_id)
        self.audit.record("dashboard", board_id, "delete", before.body(), None)

    def duplicate(self, board_id: str, name: str | None = None) -> Board:
        source = self.get(board_id)
        body = source.body()
        # Panels whose query was deleted since are dropped: the copy must validate.
        known = self.known_queries()
        body["panels"] = [p for p in body["panels"] if set(p["queries"]) <= known]
        body["name"] = name if name is not None else f"{source.name} (copy)"[:200]
        return self.create(body)

    def share(self, board_id: str) -> str:
        before = self.get(board_id)
        token = self._token()
        now = self.clock()
        if not self._g("dashboards_share", lambda: self.store.share(board_id, token, now)):
            raise NoBoard(board_id)
        # The link's token opens the dashboard: the log says a link was made, never which.
        after = {"dashboard": board_id, "shared": True, "replaced": before.shared}
        self.audit.record("share_link", board_id, "create", {"shared": before.shared}, after)
        return token

    def revoke(self, board_id: str) -> bool:
        self.get(board_id)
        gone = bool(self._g("dashboards_revoke", lambda: self.store.revoke(board_id)))
        if gone:
            after = {"dashboard": board_id, "shared": False}
            self.audit.record("share_link", board_id, "revoke", {"shared": True}, after)
        return gone

    def shared(self, token: str) -> Board | None:
        """The dashboard a share token opens; None for any other string (never an error)."""
        if not 16 <= len(token) <= 128 or not token.isascii() or not token.isprintable():
            return None
        stored = self._g("dashboards_shared", lambda: self.store.shared(token))
        return None if stored is None else self._board(stored)


def _with_meta(board: Board, stored: Any) -> Board:
    return replace(
        board,
        id=stored.id,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
        shared=bool(stored.share_token),
    )


def book_for(
    repo: Any, telemetry: DashboardTelemetry, audit: Recorder = NO_AUDIT
) -> Callable[[], BoardBook]:
    """A factory of the one BoardBook over ``repo``'s Cassandra session, built on first use
    (the tables are created then); its changes are recorded by ``audit``."""
    made: list[BoardBook] = []

    def book() -> BoardBook:
        if not made:
            from dashboard.guard import StorageUnavailable
            from storage.dashboards import DashboardStore

            session, keyspace = getattr(repo, "session", None), getattr(repo, "keyspace", None)
            if session is None or not isinstance(keyspace, str):
                raise StorageUnavailable("dashboards need the Cassandra store")
            store = guarded(
                telemetry, "dashboards_migrate", lambda: DashboardStore(session, keyspace)
            )
            made.append(BoardBook(store, repo, telemetry, audit=audit))
        return made[0]

    return book
