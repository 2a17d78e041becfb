"""The agent's version: the Debian package's (written into ``agent/_build_version.txt`` by
deploy/deb/build.sh), else the installed distribution's, else the source tree's. It is printed
by ``apm-agent --version`` and pushed as ``agent.version`` so that the health page can list the
versions across a fleet; a metric value is a number, so ``1.2.3`` is sent as 1002003."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["VERSION", "version_number"]

_BUILD_FILE = Path(__file__).with_name("_build_version.txt")


def _version() -> str:
    try:
        return _BUILD_FILE.read_text().strip()
    except OSError:
        pass
    try:
        return metadata.version("apm-platform")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def version_number(version: str) -> float:
    """``major * 1e6 + minor * 1e3 + patch`` of the leading ``X.Y.Z`` (missing parts are 0,
    each part is capped at 999); the Debian revision and any suffix are left out."""
    match = re.match(r"(?:\d+:)?(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if match is None:
        return 0.0
    major, minor, patch = (min(int(p or 0), 999) for p in match.groups())
    return float(major * 1_000_000 + minor * 1_000 + patch)


VERSION = _version()
