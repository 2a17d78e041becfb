"""Runs the dashboard in the foreground: ``apm dashboard serve`` or ``python -m dashboard.serve``.

A threaded WSGI server is enough here: each request is short (reads are paged and charts are
downsampled) and the refresh floor bounds how often wall screens ask. With
``APM_DASHBOARD_TLS_CERT``/``_KEY`` it serves HTTPS through apm.tls's context, reloaded in
place when the files change (the ingest's too).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dashboard.settings import DashboardSettings

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

__all__ = ["main", "make_server", "run", "serve", "settings_or_error"]

log = logging.getLogger("dashboard")


def settings_or_error(**overrides: Any) -> DashboardSettings | str:
    """The settings, or one line per refused setting (naming it) for the start to print."""
    from pydantic import ValidationError

    from apm.settings import refusals

    try:
        return DashboardSettings(**overrides)
    except ValidationError as exc:
        return refusals("apm dashboard", "APM_DASHBOARD_", exc)


def make_server(settings: DashboardSettings, wsgi_app: Any) -> BaseWSGIServer:
    """The threaded server on settings.host:port, HTTPS when a certificate is configured."""
    from werkzeug.serving import make_server as werkzeug_server

    from apm.tls import serving_context

    server = werkzeug_server(settings.host, settings.port, wsgi_app, threaded=True)
    context = serving_context(
        settings.tls_cert, settings.tls_key, settings.tls_client_ca, settings.tls_reload_s
    )
    if context is not None:
        # Not werkzeug's ssl_context=: it wraps the listening socket so that accept() runs
        # the handshake on the serving thread, where one silent client stops every other
        # connection. Deferred, the handshake runs on the connection's own thread (its first
        # read), and werkzeug logs a failed one as an SSL error since ssl_context is set.
        server.socket = context.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
        server.ssl_context = context
    return server


def serve(settings: DashboardSettings) -> int:
    from dashboard.app import build_context, create_app

    try:
        app = create_app(build_context(settings))
    except ValueError as exc:  # no credentials configured, bad settings
        print(f"apm dashboard: {exc}", file=sys.stderr)
        return 2
    server = make_server(settings, app.server)
    scheme = "https" if settings.https else "http"
    log.info("dashboard on %s://%s:%d (metrics at /metrics)", scheme, settings.host, server.port)
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
    return run(host=args.host, port=args.port)


def run(**options: Any) -> int:
    """``apm dashboard serve``: the settings (options given win over env; None is not given),
    a refused one printed naming it (exit 2), else serve until stopped."""
    settings = settings_or_error(**{k: v for k, v in options.items() if v is not None})
    if isinstance(settings, str):
        print(settings, file=sys.stderr)
        return 2
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
