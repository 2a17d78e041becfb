"""Runs the dashboard in the foreground: ``apm dashboard serve`` or ``python -m dashboard.serve``.

A threaded WSGI server is enough here: each request is short (reads are paged and charts are
downsampled) and the refresh floor bounds how often wall screens ask.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from dashboard.settings import DashboardSettings

__all__ = ["main", "serve"]

log = logging.getLogger("dashboard")


def serve(settings: DashboardSettings) -> int:
    from werkzeug.serving import make_server

    from dashboard.app import build_context, create_app

    try:
        app = create_app(build_context(settings))
    except ValueError as exc:  # no credentials configured, bad settings
        print(f"apm dashboard: {exc}", file=sys.stderr)
        return 2
    server = make_server(settings.host, settings.port, app.server, threaded=True)
    log.info("dashboard on http://%s:%d (metrics at /metrics)", settings.host, server.port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboard.serve")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    return serve(DashboardSettings(**overrides))


if __name__ == "__main__":
    sys.exit(main())
