"""Metric topics the ingest has not seen yet: the cardinality guard on new names, and their
creation off the request path.

Why a thread of its own: creating a topic waits for the broker's metadata (seconds on a busy
broker, the admin client's timeout when it is down). That wait used to hold the publisher's
one lock, so every other publish and /readyz stalled behind it, and a topic Kafka refused was
asked for again on every request. Now one creator thread owns the admin client and batches
the topics asked for into one request; a request waits (up to its own deadline) for its own
new topics only, and a request whose topics are all known never touches this module. What is
waiting is bounded (``max_pending``), and a refusal is remembered for ``refusal_s``.

The guard (``NewTopics``) caps how many metric names one ingest process turns into topics: a
burst of ``per_minute``, refilled evenly, and ``total`` in the process's life. A batch with
more new names than that is refused whole (the contract: a batch is accepted or rejected
whole), with 429 and Retry-After when waiting frees enough, 422 when it never will.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from apm.model import metric_for_topic
from apm.tags import TAGS_TOPIC
from ingest.errors import ApiError

__all__ = ["CreateTopics", "NewTopics", "TopicCreator", "TopicsUnavailable"]

log = logging.getLogger(__name__)

# Creates topics (one batch) and returns (those it created, {topic: why it was refused}); the
# others existed. Raises when Kafka is unreachable (every topic of the batch failed).
CreateTopics = Callable[[list[str]], tuple[list[str], Mapping[str, Exception]]]


class TopicsUnavailable(Exception):
    """A topic of the batch could not be created now (503)."""


class NewTopics:
    """The cardinality guard on the topics this process creates: ``per_minute`` (a token bucket
    of that size, refilled evenly) and ``total`` in the process's life. ``check`` refuses a
    batch whose new topics cannot be afforded now; ``charge`` counts those Kafka really
    created (a topic that existed already costs nothing). Requests checked at the same time
    may overshoot by what they hold together (at most ``topic_create_max_pending``).
    Thread-safe; ``clock`` is injected so tests never sleep."""

    def __init__(
        self, per_minute: int, total: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_minute, self.total, self.clock = per_minute, total, clock
        self._lock = threading.Lock()
        self._tokens = float(per_minute)
        self._at = clock()
        self.created = 0

    def _refill(self) -> None:  # with the lock
        now = self.clock()
        self._tokens = min(self.per_minute, self._tokens + (now - self._at) * self.per_minute / 60)
        self._at = now

    def check(self, topics: Sequence[str]) -> None:
        """Raises ApiError (429 with Retry-After, or 422 if waiting cannot help) unless the
        ``topics`` can be created now."""
        if not topics:
            return
        wanted = len(topics)
        first = metric_for_topic(topics[0]) or topics[0]
        with self._lock:
            self._refill()
            if self.created + wanted > self.total:
                raise ApiError(
                    422,
                    "validation",
                    f"{wanted} new metric name(s) (e.g. {first!r}) would pass this ingest's cap "
                    f"of {self.total} new names (new_topics_max; {self.created} so far)",
                    at="snapshots",
                    reason="new_names_cap",
                )
            if wanted > self.per_minute:
                raise ApiError(
                    422,
                    "validation",
                    f"{wanted} new metric names in one batch (e.g. {first!r}), more than this "
                    f"ingest takes per minute ({self.per_minute}, new_topics_per_minute)",
                    at="snapshots",
                    reason="new_names_rate",
                )
            if wanted > self._tokens:
                wait = max(1, math.ceil((wanted - self._tokens) * 60 / self.per_minute))
                raise ApiError(
                    429,
                    "too_many_new_names",
                    f"{wanted} new metric name(s) (e.g. {first!r}): this ingest takes "
                    f"{self.per_minute} new names per minute (new_topics_per_minute); "
                    f"retry in {wait} s",
                    at="snapshots",
                    reason="new_names_rate",
                    headers={"Retry-After": str(wait)},
                )

    def charge(self, created: int) -> None:
        with self._lock:
            self._refill()
            self._tokens -= created
            self.created += created


@dataclass
class _Creation:
    done: threading.Event = field(default_factory=threading.Event)
    error: Exception | None = None


class TopicCreator:
    """Creates topics in one background thread; ``ensure`` waits for the caller's own."""

    def __init__(
        self,
        create: CreateTopics,
        max_pending: int,
        refusal_s: float,
        guard: NewTopics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._create = create
        self.guard = guard
        self.max_pending = max_pending
        self.refusal_s = refusal_s
        self.clock = clock
        self.known: set[str] = set()  # read without the lock: a set lookup is atomic
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: dict[str, _Creation] = {}
        self._queue: list[str] = []
        self._refused: dict[str, tuple[float, str]] = {}  # topic -> (until, why)
        self._thread: threading.Thread | None = None
        self._closed = False

    def missing(self, topics: Iterable[str]) -> list[str]:
        return [t for t in topics if t not in self.known]

    def ensure(self, topics: Iterable[str], timeout_s: float) -> None:
        """Returns once every one of ``topics`` exists; raises TopicsUnavailable when one was
        refused, cannot be queued, or is not there within ``timeout_s``."""
        missing = self.missing(topics)
        if not missing:
            return
        deadline = self.clock() + timeout_s
        with self._lock:
            if self._closed:
                raise TopicsUnavailable("the service is shutting down")
            now = self.clock()
            for topic in missing:
                until, why = self._refused.get(topic, (0.0, ""))
                if until > now:
                    raise TopicsUnavailable(why)
            new = [t for t in missing if t not in self._pending and t not in self.known]
            if len(self._pending) + len(new) > self.max_pending:
                raise TopicsUnavailable(
                    f"{len(self._pending)} topics are being created already "
                    f"(topic_create_max_pending {self.max_pending}); retry later"
                )
            if self.guard is not None:  # it caps metric names: the tags topic is none
                self.guard.check([t for t in new if t != TAGS_TOPIC])
            for topic in new:
                self._pending[topic] = _Creation()
            self._queue.extend(new)
            waits = [self._pending[t] for t in missing if t in self._pending]
            self._start()
            self._wake.notify()
        for creation in waits:
            if not creation.done.wait(max(0.0, deadline - self.clock())):
                raise TopicsUnavailable("creating the batch's new topics took too long")
            if creation.error is not None:
                raise TopicsUnavailable(str(creation.error))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._wake.notify()

    def _start(self) -> None:  # with the lock
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="topic-creator", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._wake.wait()
                if self._closed:
                    failed, self._queue = self._queue, []
                    self._finish(dict.fromkeys(failed, TopicsUnavailable("shutting down")))
                    return
                batch, self._queue = self._queue, []
            try:
                created, refused = self._create(batch)
            except Exception as exc:  # Kafka unreachable: not remembered, tried anew next time
                log.warning("creating %d topic(s) failed: %s", len(batch), exc)
                down = TopicsUnavailable(f"Kafka unavailable while creating topics: {exc}")
                with self._lock:
                    # What was queued meanwhile would wait for the same timeout in turn:
                    # its requests are answered now (503) instead.
                    batch, self._queue = batch + self._queue, []
                    self._finish(dict.fromkeys(batch, down))
                continue
            if self.guard is not None:
                self.guard.charge(sum(t != TAGS_TOPIC for t in created))
            with self._lock:
                now = self.clock()
                if refused:  # forget what has expired, so that random names cannot pile up
                    self._refused = {t: v for t, v in self._refused.items() if v[0] > now}
                until = now + self.refusal_s
                for topic, error in refused.items():
                    log.warning("Kafka refused topic %s: %s", topic, error)
                    self._refused[topic] = (until, str(error))
                self.known.update(t for t in batch if t not in refused)
                self._finish({t: refused.get(t) for t in batch})

    def _finish(self, outcome: Mapping[str, Exception | None]) -> None:  # with the lock
        for topic, error in outcome.items():
            creation = self._pending.pop(topic, None)
            if creation is not None:
                creation.error = error
                creation.done.set()
