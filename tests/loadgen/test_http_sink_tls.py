"""``apm loadgen`` to an https:// target: ``tls_ca`` (``--tls-ca``) is the CA the target's
certificate is verified against, through apm.tls.client_context as the agent's pushes. A
real HTTPS server (uvicorn with a certificate of the test's CA) counts what reaches it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from loadgen.runner import run_load
from tests.support.certs import make_ca
from tests.support.http import uvicorn_thread

pytestmark = pytest.mark.unit


def _app(hits: list[int]) -> Starlette:
    async def ingest(request: Request) -> JSONResponse:
        await request.body()
        hits.append(1)
        return JSONResponse({}, status_code=202)

    return Starlette(routes=[Route("/v1/metrics", ingest, methods=["POST"])])


def test_a_target_signed_by_tls_ca_gets_every_request_and_another_ca_none(
    tmp_path: Path, make_settings
) -> None:
    ca, other = make_ca(tmp_path / "ca"), make_ca(tmp_path / "other", "other")
    cert, key = ca.issue("target")
    hits: list[int] = []
    tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    with uvicorn_thread(_app(hits), **tls) as port:
        target = f"https://localhost:{port}"
        good = run_load(make_settings(target=target, tls_ca=ca.cert), progress=False).summary
        assert good["lost"] == 0 and good["accepted"] == good["sent"] > 0, good
        assert len(hits) == good["requests"]
        bad = run_load(
            make_settings(target=target, tls_ca=other.cert, retry_deadline_s=0.5), progress=False
        ).summary
    assert bad["accepted"] == 0 and bad["lost"] == bad["sent"], bad
    assert len(hits) == good["requests"]  # nothing of the refused run reached the server


def test_a_tls_ca_that_is_no_ca_bundle_is_refused_naming_the_setting(tmp_path: Path) -> None:
    from loadgen.settings import LoadgenSettings

    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(ValidationError, match=r"tls_ca: .*junk\.pem: not a PEM certificate"):
        LoadgenSettings(tls_ca=junk)
    with pytest.raises(ValidationError, match=r"tls_ca: .*missing\.pem: no such file"):
        LoadgenSettings(tls_ca=tmp_path / "missing.pem")
