"""Request dependencies: the app's settings, publisher, telemetry and the API-key check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ingest.auth import KeyFile
from ingest.errors import ApiError
from ingest.publisher import Publisher
from ingest.settings import IngestSettings
from ingest.telemetry import IngestTelemetry
from ingest.validate import Validator

__all__ = ["AuthDep", "PublisherDep", "ServiceDep", "SettingsDep", "State"]


@dataclass
class State:
    """What one app instance holds; nothing here outlives a request except caches."""

    settings: IngestSettings
    publisher: Publisher
    keys: KeyFile
    telemetry: IngestTelemetry
    validator: Validator


def get_state(request: Request) -> State:
    return request.app.state.ingest


ServiceDep = Annotated[State, Depends(get_state)]


def get_settings(state: ServiceDep) -> IngestSettings:
    return state.settings


def get_publisher(state: ServiceDep) -> Publisher:
    return state.publisher


SettingsDep = Annotated[IngestSettings, Depends(get_settings)]
PublisherDep = Annotated[Publisher, Depends(get_publisher)]

_bearer = HTTPBearer(auto_error=False, description="an API key made by `apm ingest keygen`")


def require_key(
    state: ServiceDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> str:
    if credentials is None:
        state.telemetry.rejected("unauthorized", 0)
        raise ApiError(
            401,
            "unauthorized",
            "missing 'Authorization: Bearer <api key>'",
            at="header:Authorization",
            reason="unauthorized",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not state.keys.check(credentials.credentials):
        state.telemetry.rejected("unauthorized", 0)
        raise ApiError(
            401,
            "unauthorized",
            "the API key is not valid",
            at="header:Authorization",
            reason="unauthorized",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return credentials.credentials.partition(".")[0]


AuthDep = Annotated[str, Depends(require_key)]
