"""Factories for the package tests: the agent's .deb built from this tree (once per session,
and again at a higher version for the upgrade test) and fresh copies of the clean Debian root
(tests/support/cleanhost.py)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from apm.settings import PROJECT_ROOT
from tests.support.cleanhost import CleanHost

BUILD = PROJECT_ROOT / "deploy" / "deb" / "build.sh"


def _build(out: Path, version: str | None = None) -> Path:
    argv = [str(BUILD), "--out", str(out)] + (["--version", version] if version else [])
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def build_deb(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str | None], Path]:
    """Builds the .deb (at ``version``, default the tree's), each version once a session."""
    built: dict[str | None, Path] = {}

    def build(version: str | None = None) -> Path:
        if version not in built:
            built[version] = _build(tmp_path_factory.mktemp("deb"), version)
        return built[version]

    return build


@pytest.fixture
def clean_host(tmp_path: Path) -> Iterator[Callable[[], CleanHost]]:
    """Fresh clean bookworm roots, each with its own host name; removed afterwards."""
    hosts: list[CleanHost] = []

    def make() -> CleanHost:
        name = f"clean-{uuid.uuid4().hex[:8]}"
        host = CleanHost.fresh(tmp_path / name, name)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.remove()
