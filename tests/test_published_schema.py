"""The schemas the server publishes accept exactly what pydantic's schemas of the same models accept: on real
answers and arguments recorded from the sandbox, and on every one-step corruption of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field
from referencing import Registry

from evals.settings import CASES_DIR
from mcp_server.contract.published_schema import published_schema
from mcp_server.contract.registry import SERVED_TOOLS

Json = Any
_WRONG_TYPE: dict[type, Json] = {str: 7, int: "7", float: "7.5", bool: "true", dict: [], list: {}}


def _recorded() -> dict[str, list[tuple[Json, Json]]]:
    """Per tool, (arguments, answer) pairs as recorded from the sandbox: the largest answers first."""
    found: dict[str, list[tuple[Json, Json]]] = {}
    for path in sorted(CASES_DIR.glob("*.json")):
        for call in json.loads(path.read_text())["tool_results"]:
            found.setdefault(call["tool"], []).append((call["arguments"], call["result"]))
    return {tool: sorted(calls, key=lambda call: -len(json.dumps(call[1]))) for tool, calls in found.items()}


RECORDED = _recorded()
QUEUE_ARN = "arn:aws:sqs:ca-central-1:123456789012:orders"
FUNCTION_ARN = "arn:aws:lambda:ca-central-1:123456789012:function:data-processor"
# Answers of tools the recorded cases never call, written out by hand (checked against the model below).
WRITTEN: dict[str, Json] = {
    "get_source_consumers": {
        "source_type": "sqs_queue",
        "source_arn": QUEUE_ARN,
        "queue_url": "https://sqs.ca-central-1.amazonaws.com/123456789012/orders",
        "consumers": [
            {
                "function_name": "data-processor",
                "function_arn": FUNCTION_ARN,
                "relation": "event_source_mapping",
                "via": "0b0c0f57-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
                "state": "Enabled",
            }
        ],
        "functions_scanned": 3,
        "gaps": [{"source": "lambda:ListFunctions", "error_code": "AccessDenied", "meaning": "unknown"}],
    },
    "get_incident_history": {
        "function_name": "data-processor",
        "window_start": "2026-09-03T10:00:00.000Z",
        "incidents_read": 2,
        "incidents": [
            {
                "incident_id": "data-processor@2026-11-30T08:00:00.000Z",
                "observed_at": "2026-11-30T08:00:00.000Z",
                "status": "REMEDIATED",
                "fault_types": ["timeout", "memory_exhaustion"],
                "trigger_event": "UpdateFunctionConfiguration20150331v2",
                "resources": ["data-processor"],
                "fix": [
                    {
                        "service": "lambda",
                        "operation": "UpdateFunctionConfiguration",
                        "parameters": {"FunctionName": "data-processor", "Timeout": 30},
                    }
                ],
                "fix_verdict": "held",
                "resolved_by": "alice@example.com",
                "seconds_to_recover": 61.5,
                "similarity": 0.8,
                "shared": ["fault class", "trigger kind"],
            }
        ],
        "patterns": [
            {
                "fault_type": "timeout",
                "trigger_event": None,
                "incidents": 2,
                "in_last_30_days": 1,
                "recurring": False,
                "fixes_applied": 1,
                "fixes_held": 1,
                "mean_seconds_to_recover": None,
            }
        ],
        "gaps": [],
    },
}


def _shortened(value: Json) -> Json:
    """Lists cut to two items: every item of a list has one schema, so two show it."""
    if isinstance(value, list):
        return [_shortened(item) for item in value[:2]]
    if isinstance(value, dict):
        return {key: _shortened(item) for key, item in value.items()}
    return value


def _corrupted(value: Json) -> Iterator[Json]:
    """Every copy of ``value`` with one thing wrong: a value made null, of another type or an unknown word, a
    member removed, an unknown member added."""
    yield None
    if type(value) in _WRONG_TYPE:
        yield _WRONG_TYPE[type(value)]
    if isinstance(value, str):
        yield "not-a-known-value"
    if isinstance(value, dict):
        yield value | {"unexpected_member": 1}
        for key, item in value.items():
            yield {name: other for name, other in value.items() if name != key}
            for wrong in _corrupted(item):
                yield value | {key: wrong}
    if isinstance(value, list):
        for index, item in enumerate(value):
            for wrong in _corrupted(item):
                yield [*value[:index], wrong, *value[index + 1 :]]


def _validators(model: type[BaseModel]) -> tuple[Draft202012Validator, Draft202012Validator]:
    # An empty registry, as the MCP SDK's client builds its validators: references resolve inside the schema.
    schemas = (model.model_json_schema(by_alias=True), published_schema(model))
    return Draft202012Validator(schemas[0], registry=Registry()), Draft202012Validator(
        schemas[1], registry=Registry()
    )


def _disagreements(model: type[BaseModel], instances: list[Json]) -> list[str]:
    pydantics, published = _validators(model)
    found = []
    for instance in instances:
        for candidate in [instance, *_corrupted(instance)]:
            if pydantics.is_valid(candidate) != published.is_valid(candidate):
                found.append(json.dumps(candidate)[:300])
    return found


@pytest.mark.parametrize("tool", sorted(SERVED_TOOLS))
def test_a_tool_s_published_answer_schema_accepts_what_pydantic_s_accepts(tool: str) -> None:
    answers = [_shortened(answer) for _, answer in RECORDED.get(tool, [])[:2]] or [WRITTEN[tool]]
    for answer in answers:
        SERVED_TOOLS[tool].response.model_validate(answer)
    assert _disagreements(SERVED_TOOLS[tool].response, answers) == []


@pytest.mark.parametrize("tool", sorted(SERVED_TOOLS))
def test_a_tool_s_published_argument_schema_accepts_what_pydantic_s_accepts(tool: str) -> None:
    arguments = [arguments for arguments, _ in RECORDED.get(tool, [])]
    subject = "source" if "source" in SERVED_TOOLS[tool].arguments.model_fields else "lambda_name"
    arguments.append({subject: "data-processor", "region": "ca-central-1", "account": "production"})
    assert _disagreements(SERVED_TOOLS[tool].arguments, arguments) == []


class Inner(BaseModel):
    count: int = Field(ge=0)


class Shapes(BaseModel):
    kind: Literal["a", "b"] | None = None
    inner: Inner | None = None
    counts: list[int] | None = Field(default=None, min_length=1)
    name: str | None = Field(default=None, pattern="^x")


def test_nullable_alternatives_become_type_lists_but_a_nullable_enum_keeps_its_null() -> None:
    schema = published_schema(Shapes)
    text = json.dumps(schema)
    assert [word for word in ("$ref", "$defs", '"title"') if word in text] == []
    assert schema["properties"]["inner"]["type"] == ["object", "null"]
    assert schema["properties"]["counts"]["type"] == ["array", "null"]
    assert schema["properties"]["name"]["type"] == ["string", "null"]
    assert "anyOf" in schema["properties"]["kind"]  # an enum would refuse null inside a type list
    samples = [
        {"kind": "a", "inner": {"count": 1}, "counts": [1], "name": "xy"},
        {"kind": None, "inner": None, "counts": None, "name": None},
    ]
    assert _disagreements(Shapes, samples) == []
    assert not _validators(Shapes)[1].is_valid({"kind": "c"})
    assert not _validators(Shapes)[1].is_valid({"counts": []})


class Node(BaseModel):
    child: Node | None = None


def test_a_recursive_model_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="Node refers to itself"):
        published_schema(Node)
