"""The agent's version: the Debian package's (written into ``agent/_build_version.txt`` by
deploy/deb/build.sh), else the installed distribution's, else the source tree's. It is printed
by ``apm-agent --version`` and pushed as ``agent.version`` so that the health page can list the
versions across a fleet; a metric value is a number, so ``1.2.3`` is sent as 1002003."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from apm.agentversion import version_number

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


VERSION = _version()
