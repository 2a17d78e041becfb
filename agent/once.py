"""``apm agent --once``: one snapshot over one second, printed or pushed, to check a host."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from agent.runner import Agent
from agent.settings import AgentSettings
from agent.spool import Spool

__all__ = ["once"]


def once(settings: AgentSettings, *, print_only: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="apm-agent-once-") as tmp:
        # A private spool: a check must neither consume nor add to the service's backlog.
        agent = Agent(settings, spool=Spool(Path(tmp), fsync=False), statsd=False)
        agent.collect(time.time())
        time.sleep(1.0)
        snapshot = agent.snapshots(float(int(time.time())))[-1]
        if print_only:
            json.dump(snapshot.to_json(), sys.stdout, indent=2, sort_keys=True)
            print()
            return 0
        from agent.runner import encode_snapshot

        agent.spool.append(encode_snapshot(snapshot))
        stop = threading.Event()
        deadline = time.monotonic() + 10
        while agent.spool.depth and time.monotonic() < deadline:
            delay = agent.pusher.push_once()
            if delay:  # a long Retry-After or a blocked push must not outlast the check
                stop.wait(min(delay, max(0.0, deadline - time.monotonic())))
        if agent.spool.depth:
            print(
                f"apm agent: could not push to {settings.ingest_url} in 10 s (see the log above)",
                file=sys.stderr,
            )
            return 1
        print(f"pushed 1 snapshot with {len(snapshot.metrics)} metrics to {settings.ingest_url}")
        return 0
