"""The OpenAPI 3.1 description of ``/api/alerts`` (dashboard/alerts_api.py), served at
``/api/alerts/openapi.json``; tests/dashboard/test_alerts_api.py checks that every route of the
blueprint is described here and that it validates as OpenAPI."""

from __future__ import annotations

from typing import Any

__all__ = ["OPENAPI"]

_ERROR = {
    "description": "the one error shape (apm/errors.py)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_JSON = {"application/json": {"schema": {"type": "object"}}}


def _op(
    summary: str, ok: str = "200", body: bool = False, errors: tuple[str, ...] = ()
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {ok: {"description": "ok", "content": _JSON}, **{k: _ERROR for k in errors}},
    }
    if body:
        op["requestBody"] = {"required": True, "content": _JSON}
    return op


def _id(name: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}]


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "APM alerting API", "version": "1"},
    "paths": {
        "/api/alerts": {"get": _op("rules with their alert's newest state", errors=("503",))},
        "/api/alerts/rules": {
            "post": _op("create a rule (docs/alerting.md)", "201", True, errors=("400", "422"))
        },
        "/api/alerts/rules/preview": {
            "post": _op(
                "the rule's states over the last hour (server_silent: its servers now)",
                body=True,
                errors=("400", "422"),
            )
        },
        "/api/alerts/rules/{rule_id}": {
            "put": {
                **_op(
                    "replace a rule, validated as on create; kind, query_id and function fixed",
                    body=True,
                    errors=("400", "404", "422"),
                ),
                "parameters": _id("rule_id"),
            },
            "delete": {**_op("delete a rule", errors=("404",)), "parameters": _id("rule_id")},
        },
        "/api/alerts/rules/{rule_id}/history": {
            "get": {
                **_op("the rule's state per window (changes=1: transitions only)"),
                "parameters": [
                    *_id("rule_id"),
                    {"name": "since", "in": "query", "schema": {"type": "number"}},
                    {"name": "changes", "in": "query", "schema": {"type": "string"}},
                ],
            }
        },
        "/api/alerts/silences": {
            "get": _op("silences and what each suppressed"),
            "post": _op("add a silence", "201", True, errors=("400", "422")),
        },
        "/api/alerts/silences/{silence_id}": {
            "delete": {**_op("delete a silence", errors=("404",)), "parameters": _id("silence_id")}
        },
        "/api/alerts/test-notify": {
            "post": {
                **_op("send a test notification to each receiver", errors=("404", "502", "503")),
                "parameters": [{"name": "receiver", "in": "query", "schema": {"type": "string"}}],
            }
        },
        "/api/alerts/openapi.json": {"get": _op("this document")},
    },
    "components": {
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error", "detail", "at"],
                "properties": {
                    "error": {"type": "string"},
                    "detail": {"type": "string"},
                    "at": {"type": ["string", "integer", "null"]},
                },
            }
        }
    },
}
