"""Server TLS whose certificate and key are reloaded when their files change.

One ``ssl.SSLContext`` is built and kept: ``reload_if_changed`` calls ``load_cert_chain``
on that same context, so connections already open keep their session and every handshake
after the reload presents the new pair. A half-written pair (cert and key not matching)
raises ``ssl.SSLError`` and leaves the old pair in place.

One place for every service that serves HTTPS (the ingest under uvicorn, the dashboard under
werkzeug): ``check_server_files`` is what their settings classes run, so that a lone cert or
key, a missing, unreadable or non-PEM file, or a key that does not match its certificate stops
the start with a message naming the setting; ``serving_context`` builds the context and starts
its watcher thread. ``check_named``, ``check_pair`` and ``check_ca`` check the agent's client files
too; ``check_client_files`` and ``client_context`` are every TLS client's: Kafka's and
Cassandra's (apm.kafka_tls, storage.settings), the agent's pushes and ``apm loadgen``'s.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "ReloadingServerContext",
    "check_ca",
    "check_client_files",
    "check_named",
    "check_pair",
    "check_pem",
    "check_server_files",
    "client_context",
    "serving_context",
    "watch",
]

log = logging.getLogger(__name__)

# What each file must hold: a PEM block of this kind (a key may be "EC", "RSA" or PKCS#8).
_CERT_MARK = "-----BEGIN CERTIFICATE-----"
_KEY_MARK = "PRIVATE KEY-----"
# A CA bundle or a key larger than this is not one; read no further.
_MAX_PEM_BYTES = 4 * 1024 * 1024


def check_pem(path: Path, what: str) -> None:
    """ValueError unless ``path`` is a readable file holding a PEM ``what`` ("cert"/"key")."""
    try:
        size = path.stat().st_size
        if size > _MAX_PEM_BYTES:
            raise ValueError(f"{path}: {size} bytes is not a PEM file (at most {_MAX_PEM_BYTES})")
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a directory, not a PEM file") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    mark, kind = (_CERT_MARK, "certificate") if what == "cert" else (_KEY_MARK, "private key")
    if mark not in text:
        raise ValueError(f"{path}: not a PEM {kind} (no '{mark.strip('-')}' block)")


def check_named(files: Iterable[tuple[str, Path | None, str]]) -> None:
    """check_pem for each (setting, path or None, "cert"/"key"), the error naming the setting."""
    for name, path, what in files:
        if path is not None:
            try:
                check_pem(path, what)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None


def check_ca(name: str, path: Path) -> None:
    """ValueError naming ``name`` unless ``path`` loads as a bundle of CA certificates."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cafile=str(path))
    except ssl.SSLError as exc:
        raise ValueError(f"{name}: {path}: not a usable CA bundle: {exc}") from None


def check_pair(cert_name: str, cert: Path, key_name: str, key: Path) -> None:
    """ValueError naming both settings unless the key loads with its certificate."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(str(cert), str(key))
    except ssl.SSLError as exc:
        why = (
            "the key does not match the certificate"
            if "KEY_VALUES_MISMATCH" in str(exc)
            else f"cannot be loaded: {exc}"
        )
        raise ValueError(f"{key_name} {key} with {cert_name} {cert}: {why}") from None


def check_server_files(
    prefix: str, cert: Path | None, key: Path | None, client_ca: Path | None
) -> None:
    """ValueError naming the setting (``prefix`` + TLS_CERT, TLS_KEY, TLS_CLIENT_CA) and the
    file for anything a server could not serve with; nothing when none is given (plain HTTP)."""
    cert_name, key_name, ca_name = (f"{prefix}TLS_{n}" for n in ("CERT", "KEY", "CLIENT_CA"))
    if (cert is None) != (key is None):
        raise ValueError(
            f"{cert_name} and {key_name} go together (the server's certificate and its key): "
            "give both or neither"
        )
    if client_ca is not None and cert is None:
        raise ValueError(f"{ca_name} needs {cert_name} and {key_name} (mTLS is over HTTPS)")
    check_named(((cert_name, cert, "cert"), (key_name, key, "key"), (ca_name, client_ca, "cert")))
    if cert is not None and key is not None:
        check_pair(cert_name, cert, key_name, key)
    if client_ca is not None:
        check_ca(ca_name, client_ca)


def check_client_files(
    names: tuple[str, str, str], ca: Path | None, cert: Path | None, key: Path | None
) -> None:
    """ValueError naming the setting (``names``: the CA's, the certificate's, the key's) for
    anything a TLS client could not connect with; a certificate needs its key and back."""
    ca_name, cert_name, key_name = names
    if (cert is None) != (key is None):
        raise ValueError(
            f"{cert_name} and {key_name} go together (the client certificate and its key): "
            "give both or neither"
        )
    check_named(((ca_name, ca, "cert"), (cert_name, cert, "cert"), (key_name, key, "key")))
    if ca is not None:
        check_ca(ca_name, ca)
    if cert is not None and key is not None:
        check_pair(cert_name, cert, key_name, key)


def client_context(
    ca: Path | None = None,
    cert: Path | None = None,
    key: Path | None = None,
    check_hostname: bool = True,
    *,
    skip_verify: bool = False,
) -> ssl.SSLContext:
    """A TLS 1.2+ client context that verifies the chain up to ``ca`` alone when given (it
    *replaces* the system roots), else the system store, and the host name unless
    ``check_hostname`` is False; with a client certificate when ``cert`` and ``key`` are given;
    ``skip_verify`` checks nothing (the agent's ``insecure_skip_verify``)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca is not None:
        ctx.load_verify_locations(cafile=str(ca))
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert is not None and key is not None:
        ctx.load_cert_chain(str(cert), str(key))
    ctx.check_hostname = check_hostname and not skip_verify
    if skip_verify:
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


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


def serving_context(
    cert: Path | None, key: Path | None, client_ca: Path | None, reload_s: float
) -> ssl.SSLContext | None:
    """The context a service serves HTTPS with, None for plain HTTP (no cert): the pair is
    loaded now and a daemon thread reloads it in place every ``reload_s`` while it changes."""
    if cert is None or key is None:
        return None
    server = ReloadingServerContext(cert, key, client_ca)
    threading.Thread(
        target=watch,
        args=(server, reload_s, threading.Event()),
        name="tls-reload",
        daemon=True,
    ).start()
    return server.context
