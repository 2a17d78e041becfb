"""A private CA and certificates signed by it, made with Debian's openssl for TLS tests."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Ca", "make_ca"]


# A new unencrypted P-256 key, for the CA and for each certificate it issues.
_NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Ca:
    dir: Path
    cert: Path
    key: Path

    def issue(self, name: str, cn: str = "localhost") -> tuple[Path, Path]:
        """A certificate for ``cn`` (also 127.0.0.1) signed by this CA: (cert, key)."""
        key, csr, cert = (self.dir / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        ext = self.dir / f"{name}.ext"
        ext.write_text(f"subjectAltName=DNS:{cn},IP:127.0.0.1\n")
        _openssl(
            "req",
            "-new",
            *_NEW_KEY,
            "-keyout",
            str(key),
            "-out",
            str(csr),
            "-subj",
            f"/CN={cn}",
            cwd=self.dir,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            str(csr),
            "-CA",
            str(self.cert),
            "-CAkey",
            str(self.key),
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            str(cert),
            "-extfile",
            str(ext),
            cwd=self.dir,
        )
        return cert, key


def make_ca(directory: Path, name: str = "ca") -> Ca:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _openssl(
        "req",
        "-x509",
        *_NEW_KEY,
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        "2",
        "-subj",
        f"/CN=test {name}",
        cwd=directory,
    )
    return Ca(directory, cert, key)
