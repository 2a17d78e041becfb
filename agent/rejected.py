"""The set-aside file, ``rejected.jsonl``: snapshots whose content the ingest refused for good,
each line ``{"time": ..., "status": 422, "reason": {...}, "snapshot": {...}}``, for a person to
read. It stays bounded: past ``max_bytes`` it is rotated once to ``rejected.old``.

Only content refusals come here (see agent.answers); a configuration error never does, so the
cap cannot eat a backlog.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

__all__ = ["RejectedFile"]

log = logging.getLogger(__name__)


class RejectedFile:
    def __init__(self, path: Path | None, max_bytes: int = 10 * 1024 * 1024) -> None:
        self.path = path
        self.max_bytes = max_bytes

    def write(self, entries: list[tuple[bytes, dict[str, Any]]], status: int, now: float) -> None:
        """Appends each ``(snapshot record, reason)``. A failure to write is logged: the
        refusal itself is already counted and logged by the caller."""
        if self.path is None or not entries:
            return
        lines = []
        for record, reason in entries:
            head = json.dumps({"time": now, "status": status, "reason": reason}, default=str)
            # The record is the JSON the agent encoded itself: embedded as is, not re-parsed.
            lines.append(head[:-1].encode() + b',"snapshot":' + record + b"}\n")
        try:
            if self.path.exists() and self.path.stat().st_size > self.max_bytes:
                self.path.replace(self.path.with_suffix(".old"))
            with open(self.path, "ab") as handle:
                handle.write(b"".join(lines))
        except OSError as exc:
            log.error("cannot write %s: %s", self.path, exc)
