"""The HTTP API's OpenAPI 3.1 schema, generated from the same pydantic models the routes use.

The generated schema is committed as `openapi.json` next to this module and served at `/openapi.json`;
a test fails when the two drift apart. After changing the API, regenerate it with:

```sh
python -m proctor.service._openapi > src/proctor/service/openapi.json
```
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from proctor import __version__
from proctor.service._models import EvaluationRequest, EvaluationResult, HealthResponse
from proctor.service._pipeline import JUDGES

__all__ = ["SCHEMA_PATH", "committed_schema_text", "openapi_schema", "schema_text"]

SCHEMA_PATH = Path(__file__).with_name("openapi.json")
"""The committed schema."""
_REF = "#/components/schemas/{model}"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_DETAIL = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
    "title": "ErrorMessage",
}
_VALIDATION = {
    "type": "object",
    "title": "ValidationErrors",
    "properties": {
        "detail": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                    "msg": {"type": "string"},
                    "type": {"type": "string"},
                },
                "required": ["loc", "msg", "type"],
            },
        }
    },
    "required": ["detail"],
}


def _responses(ok: dict[str, Any], *extra: int) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": ok}
    texts = {
        401: "Missing or invalid bearer token (only when the service has an API token).",
        404: "Unknown judge.",
        413: "Request body over the size limit.",
        422: "Invalid body or query: every field error.",
    }
    for code in (401, *extra):
        schema = _ref("ValidationErrors") if code == 422 else _ref("ErrorMessage")
        responses[str(code)] = _json(schema, texts[code])
    return responses


# Long as the document it writes: one literal, paths then components, read top to bottom.
def openapi_schema() -> dict[str, Any]:
    """Build the OpenAPI document of the HTTP API."""
    models: list[tuple[type[BaseModel], Any]] = [
        (EvaluationRequest, "validation"),
        (EvaluationResult, "serialization"),
        (HealthResponse, "serialization"),
    ]
    _, top = models_json_schema(models, ref_template=_REF)
    schemas: dict[str, Any] = dict(sorted(top.get("$defs", {}).items()))
    schemas["ErrorMessage"] = _DETAIL
    schemas["ValidationErrors"] = _VALIDATION
    request_body = {"required": True, "content": {"application/json": {"schema": _ref("EvaluationRequest")}}}
    result = _json(_ref("EvaluationResult"), "The evaluation result.")
    bearer: list[dict[str, list[str]]] = [{"bearer": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Proctor online evaluation service",
            "version": __version__,
            "description": "Scores agent responses: prechecks, early exit, LLM judges, confidence and verdict.",
        },
        "paths": {
            "/api/v1/health": {
                "get": {
                    "operationId": "health",
                    "summary": "Liveness check (no token needed).",
                    "responses": {"200": _json(_ref("HealthResponse"), "The service is up.")},
                }
            },
            "/api/v1/evaluate": {
                "post": {
                    "operationId": "evaluate",
                    "summary": "Evaluate one agent response.",
                    "security": bearer,
                    "requestBody": request_body,
                    "responses": _responses(result, 413, 422),
                }
            },
            "/api/v1/evaluate/judge/{name}": {
                "post": {
                    "operationId": "evaluateJudge",
                    "summary": "Run one judge alone: verdict pass when its score is above the threshold.",
                    "security": bearer,
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "enum": sorted([*JUDGES, *(f"{j}-judge" for j in JUDGES)])},
                        },
                        {
                            "name": "threshold",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.7},
                        },
                    ],
                    "requestBody": request_body,
                    "responses": _responses(result, 404, 413, 422),
                }
            },
            "/api/v1/evaluate/batch": {
                "post": {
                    "operationId": "evaluateBatch",
                    "summary": "Evaluate a list of agent responses; results in the same order.",
                    "security": bearer,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": _ref("EvaluationRequest")}}
                        },
                    },
                    "responses": _responses(
                        _json({"type": "array", "items": _ref("EvaluationResult")}, "One result per event."),
                        413,
                        422,
                    ),
                }
            },
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def schema_text() -> str:
    """The generated schema as the committed file's text (sorted keys, 2-space indent, final newline)."""
    return json.dumps(openapi_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@lru_cache(maxsize=1)
def committed_schema_text() -> str:
    """The committed schema file's text (what `/openapi.json` serves)."""
    return SCHEMA_PATH.read_text(encoding="utf-8")


if __name__ == "__main__":
    print(schema_text(), end="")
