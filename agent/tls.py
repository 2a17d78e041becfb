"""The agent's client TLS, as Telegraf's ``tls_ca``/``tls_cert``/``tls_key``.

``tls_ca`` *replaces* the system roots: an agent told to trust a private CA trusts only it,
so that a certificate some public CA issued for the same name is not accepted. Without it an
https:// ingest is verified against the system store. ``tls_cert`` with ``tls_key`` is the
client certificate an ingest with ``APM_INGEST_TLS_CLIENT_CA`` requires.

``insecure_skip_verify`` (off by default) turns verification off, for a test bench; the
agent logs a warning at every start while it is on.

``check_files`` is what the settings class runs, so that ``apm-agent check-config`` and the
service's start refuse a missing file, a file that is not PEM, a lone cert or key, and a key
that does not match its certificate, each with a message naming the key and the file.
``ClientTls`` builds the context and builds it again when one of its files changes (a CA
replaced on disk is used from the next connection on, without a restart).
"""

from __future__ import annotations

import logging
import ssl
import stat
from dataclasses import dataclass, field
from pathlib import Path

from apm.tls import check_ca, check_named, check_pair, client_context

__all__ = [
    "ClientTls",
    "TlsFiles",
    "TlsRefused",
    "check_files",
    "closed_after_handshake",
    "describe_error",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TlsFiles:
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str = ""
    # No check of the ingest's certificate at all: the agent warns at every start.
    skip_verify: bool = False


def check_files(files: TlsFiles) -> None:
    """ValueError naming the setting and the file for anything the agent could not use."""
    if (files.cert is None) != (files.key is None):
        raise ValueError(
            "tls_cert and tls_key go together (a client certificate and its key): "
            "give both or neither"
        )
    check_named(
        (
            ("tls_ca", files.ca, "cert"),
            ("tls_cert", files.cert, "cert"),
            ("tls_key", files.key, "key"),
        )
    )
    if files.key is not None and files.key.stat().st_mode & stat.S_IROTH:
        mode = stat.S_IMODE(files.key.stat().st_mode)
        raise ValueError(
            f"tls_key: {files.key}: others may read this private key (mode {mode:04o}); "
            f"chmod 0640 {files.key} (owner root, group apm-agent) or 0600"
        )
    if files.ca is not None:
        check_ca("tls_ca", files.ca)
    if files.cert is not None and files.key is not None:
        check_pair("tls_cert", files.cert, "tls_key", files.key)


@dataclass
class ClientTls:
    """The client context for ``files``, built again when a file's mtime or size changes."""

    files: TlsFiles
    _stamp: tuple[tuple[int, int], ...] = field(default=(), init=False)
    _ctx: ssl.SSLContext | None = field(default=None, init=False)

    def _stat(self) -> tuple[tuple[int, int], ...]:
        paths = [p for p in (self.files.ca, self.files.cert, self.files.key) if p is not None]
        out = []
        for path in paths:
            try:
                st = path.stat()
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((-1, -1))
        return tuple(out)

    @property
    def server_name(self) -> str | None:
        return self.files.server_name or None

    def context(self) -> ssl.SSLContext:
        """The context for the next connection. A file changed into something unusable (a CA
        being rewritten) is logged and the last good context kept until the next connection."""
        stamp = self._stat()
        if self._ctx is None or stamp != self._stamp:
            try:
                check_files(self.files)
                f = self.files
                ctx = client_context(f.ca, f.cert, f.key, skip_verify=f.skip_verify)
            except (ValueError, OSError) as exc:
                if self._ctx is None:
                    raise
                log.error("TLS files changed but cannot be used, the previous kept: %s", exc)
                return self._ctx
            if self._ctx is not None:
                log.info("TLS files changed: the next connection uses them")
            self._ctx, self._stamp = ctx, stamp
        return self._ctx


class TlsRefused(ConnectionError):
    """The ingest closed a new connection right after the TLS handshake, before answering.

    Under TLS 1.3 the client's handshake ends before the server has checked the client's
    certificate, so an ingest that requires one (and got none, or one from another CA) shows
    up as a reset or an EOF on the first read, not as a handshake error."""

    def __init__(self, netloc: str, cause: BaseException) -> None:
        super().__init__(
            f"TLS: the ingest at {netloc} closed the connection right after the handshake "
            f"({cause!r}): it requires a client certificate and this agent sent none or one "
            "from a CA it does not trust; check tls_cert and tls_key"
        )


def closed_after_handshake(exc: BaseException) -> bool:
    """Whether ``exc`` is the peer going away (reset, broken pipe, TLS EOF) rather than
    another failure: on a fresh TLS connection, that is a refused client certificate."""
    return isinstance(exc, ConnectionResetError | BrokenPipeError | ssl.SSLEOFError)


def describe_error(exc: OSError, netloc: str) -> str:
    """One line naming the host and the reason, with what to check."""
    if isinstance(exc, TlsRefused):
        return str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or exc.reason or str(exc)
        return (
            f"TLS: the certificate of {netloc} is not trusted: {reason}; check tls_ca "
            "(the CA that signed the ingest's certificate) and tls_server_name"
        )
    reason = getattr(exc, "reason", None) or str(exc)
    return (
        f"TLS handshake with {netloc} failed: {reason}; check tls_cert and tls_key if the "
        "ingest requires a client certificate"
    )
