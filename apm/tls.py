"""Server TLS whose certificate and key are reloaded when their files change.

One ``ssl.SSLContext`` is built and kept: ``reload_if_changed`` calls ``load_cert_chain``
on that same context, so connections already open keep their session and every handshake
after the reload presents the new pair. A half-written pair (cert and key not matching)
raises ``ssl.SSLError`` and leaves the old pair in place.
"""

from __future__ import annotations

import logging
import ssl
import threading
from pathlib import Path

__all__ = ["ReloadingServerContext", "watch"]

log = logging.getLogger(__name__)


class ReloadingServerContext:
    def __init__(self, certfile: Path, keyfile: Path, client_ca: Path | None = None) -> None:
        self.certfile = certfile
        self.keyfile = keyfile
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        if client_ca is not None:
            # mTLS: a client certificate from another CA fails the handshake.
            self.context.load_verify_locations(cafile=str(client_ca))
            self.context.verify_mode = ssl.CERT_REQUIRED
        self._stamp = self._stat()
        self.context.load_cert_chain(str(certfile), str(keyfile))

    def _stat(self) -> tuple[tuple[int, int], tuple[int, int]]:
        # mtime and size of both files: an editor's rewrite or a renamed-in file changes one.
        c, k = self.certfile.stat(), self.keyfile.stat()
        return (c.st_mtime_ns, c.st_size), (k.st_mtime_ns, k.st_size)

    def reload_if_changed(self) -> bool:
        """Load the pair again when either file changed; True when it was reloaded."""
        stamp = self._stat()
        if stamp == self._stamp:
            return False
        # A failed load_cert_chain can leave the context without a usable pair, so the new
        # pair is tried on a scratch context first and only a good one reaches the live one.
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(
            str(self.certfile), str(self.keyfile)
        )
        self.context.load_cert_chain(str(self.certfile), str(self.keyfile))
        self._stamp = stamp
        return True


def watch(server: ReloadingServerContext, interval_s: float, stop: threading.Event) -> None:
    """Check the pair every ``interval_s`` until ``stop``; a bad pair is logged, the old kept."""
    while not stop.wait(interval_s):
        try:
            if server.reload_if_changed():
                log.info("TLS certificate reloaded from %s", server.certfile)
        except (OSError, ssl.SSLError) as exc:
            log.error("TLS certificate not reloaded, the previous one is kept: %s", exc)
