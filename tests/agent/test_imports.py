"""The agent runs with the base install and the agent extra only: it must never load the
platform's heavy dependencies."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

FORBIDDEN = ("kafka", "pyspark", "dash", "cassandra", "fastapi", "httpx", "numpy", "orjson")


def test_the_agent_imports_no_heavy_dependency() -> None:
    code = (
        "import sys, agent.runner, agent.once, agent.install, agent.cli, apm.cli; "
        "apm.cli.build_parser(); "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"
