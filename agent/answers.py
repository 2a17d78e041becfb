"""How the pusher reads the ingest's answers: what each status means for the batch, the
``Retry-After`` hint, and the per-snapshot verdicts of a partial success.

The rule (docs/agent.md, "What the agent does with each answer"): only a refusal of the batch's
own content sets snapshots aside (422, and 413 once the batch is down to one snapshot). An
answer that says the agent is misconfigured (401, 403, 404, a redirect ...) is no verdict on
the data: the spool keeps everything and the agent backs off and says so loudly. Nothing here
raises on what a server or a proxy sends: every header and body is untrusted text.
"""

from __future__ import annotations

import email.utils
import json
import math
from enum import Enum
from typing import Any

__all__ = ["Action", "classify", "rejected_by_index", "retry_after_seconds"]

# A partial-success body larger than this is not parsed (the batch then counts as delivered):
# the ingest's verdicts for 300 snapshots fit in a small fraction of it.
_MAX_VERDICT_BODY = 4 * 1024 * 1024


class Action(Enum):
    DELIVERED = "delivered"  # 2xx: acknowledge (minus any snapshots listed as rejected)
    RETRY = "retry"  # 408, 429, 5xx: transient, back off (Retry-After honoured, capped)
    SPLIT = "split"  # 413 on a batch of several snapshots: send smaller batches
    REFUSED = "refused"  # 422, or 413 on one snapshot: set the batch aside
    BLOCKED = "blocked"  # auth, routing, redirects, anything else: keep the spool, back off


def classify(status: int, batch_size: int) -> Action:
    if 200 <= status < 300:
        return Action.DELIVERED
    if 500 <= status < 600 or status in (408, 429):
        return Action.RETRY
    if status == 413:
        return Action.SPLIT if batch_size > 1 else Action.REFUSED
    if status == 422:
        return Action.REFUSED
    # 1xx, 3xx (the client follows no redirect), 400, 401, 403, 404, 405, 407, 410, 415 ...:
    # the request did not reach an ingest that judged the data, or the agent sent it wrongly.
    # Either way a person must fix the config; the data is fine and must wait for them.
    return Action.BLOCKED


def retry_after_seconds(value: object, now: float, cap: float) -> float | None:
    """A Retry-After header (delay-seconds or an HTTP date) as seconds from ``now``, within
    ``[0, cap]``; None when it is absent or unreadable. Never raises, whatever the text."""
    try:
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            return None
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            when = email.utils.parsedate_to_datetime(text)
            seconds = when.timestamp() - now
        if math.isnan(seconds):
            return None
        # inf, 1e400 or the year 9999 all mean "a long time": the cap, never an overflow.
        return min(cap, max(0.0, seconds))
    except Exception:  # parsedate_to_datetime raises TypeError, ValueError, IndexError ...
        return None


def rejected_by_index(body: bytes, batch_size: int) -> dict[int, dict[str, Any]]:
    """The snapshots a 2xx answer lists as rejected, by index into the batch, with whatever
    reason came with each. Read tolerantly: any body that is not such a list (none, ``{}``,
    ``{"accepted": n}``, not JSON) means every snapshot was delivered.

    Understood shapes: ``{"rejected": [3, 7]}`` and
    ``{"rejected": [{"index": 3, "error": "validation", "detail": "...", "at": "..."}]}``.
    """
    if not body or len(body) > _MAX_VERDICT_BODY:
        return {}
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    items = doc.get("rejected") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return {}
    out: dict[int, dict[str, Any]] = {}
    for item in items:
        reason: dict[str, Any] = {}
        index = item
        if isinstance(item, dict):
            index = item.get("index")
            reason = {k: v for k, v in item.items() if k != "index"}
        # bool is an int in Python; an index of true is nonsense, not snapshot 1.
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < batch_size:
            out[index] = reason
    return out
