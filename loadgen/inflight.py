"""Blocking work run off the event loop with a bound on how much is in flight: the sinks'
back-pressure. ``submit`` waits for a free slot, so the generator never runs ahead of what the
ingest or the broker takes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["BoundedExecutor"]

log = logging.getLogger(__name__)


class BoundedExecutor:
    def __init__(self, threads: int, in_flight: int, name: str) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=name)
        self._in_flight = in_flight
        self._name = name
        self._slots: asyncio.Semaphore | None = None  # made in the loop that uses it
        self._pending: set[asyncio.Future[Any]] = set()

    async def submit(self, call: Callable[..., object], *args: object) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._in_flight)
        await self._slots.acquire()
        future = asyncio.get_running_loop().run_in_executor(self._pool, call, *args)
        self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[Any]) -> None:
        self._pending.discard(future)
        assert self._slots is not None
        self._slots.release()
        if not future.cancelled() and future.exception() is not None:
            log.error("%s: work failed unexpectedly: %r", self._name, future.exception())

    async def drain(self) -> None:
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)
