"""Schemathesis over the served OpenAPI schema, positive and negative cases, with a valid key:
no 5xx answer (503 cannot happen here: the fake publisher is always up)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from ingest.app import create_app
from ingest.auth import add_key
from ingest.settings import IngestSettings
from tests.ingest.fakes import FakePublisher

pytestmark = pytest.mark.unit

_KEYS = Path(tempfile.mkdtemp(prefix="apm-ingest-fuzz-")) / "keys"
_KEY = add_key(_KEYS, "fuzz")
# ts rules depend on the clock; a wide window lets generated numbers pass or fail either way.
app = create_app(IngestSettings(keys_file=_KEYS, max_samples=500), publisher=FakePublisher())
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error(case):
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {_KEY}"}
    response = case.call()
    assert response.status_code < 500, (response.status_code, response.text)
    case.validate_response(response, checks=[not_a_server_error])
