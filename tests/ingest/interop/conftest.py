"""The interop tests' shared app: one per module, for the fuzzers' hundreds of requests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A TestClient over an app with a fake publisher, shared by the module's tests."""
    from fastapi.testclient import TestClient

    from ingest.app import create_app
    from ingest.auth import add_key
    from ingest.settings import IngestSettings
    from tests.ingest.fakes import FakePublisher

    keys = tmp_path_factory.mktemp("keys") / "ingest-keys"
    key = add_key(keys, "tests")
    app = create_app(IngestSettings(keys_file=keys), publisher=FakePublisher())
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        yield c
