"""The case format (versioned) and the corpus: loading with errors that name the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from mcp_server.contract.registry import TOOL_NAMES, TOOLS, ToolName
from supervisor.faults.registry import FaultType

FORMAT_VERSION: Final = 1
CASE_ID_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"


def canonical_arguments(tool: str, arguments: dict[str, Any]) -> str:
    """The arguments with every default filled in, as sorted JSON: two calls that ask the same thing (with
    or without ``"minutes": 30``) have the same key. Raises ValidationError for arguments the tool refuses."""
    parsed = TOOLS[tool].arguments.model_validate(arguments)
    return json.dumps(parsed.model_dump(mode="json"), sort_keys=True)


def _unique(values: list[FaultType]) -> list[FaultType]:
    if len(set(values)) != len(values):
        raise ValueError("must not contain duplicates")
    return values


Faults = Annotated[list[FaultType], AfterValidator(_unique)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpectedTrigger(_Model):
    """The change that started the incident, as CloudTrail recorded the injector's call."""

    event_name: str = Field(min_length=1, description="CloudTrail's eventName, e.g. 'DeleteRolePolicy'.")
    identity: str | None = Field(description="The ARN of who made the change.")


class Expected(_Model):
    """The right answer."""

    faults: Faults = Field(min_length=1, description="The exact fault set; ['unknown'] when none is real.")
    trigger: ExpectedTrigger | None = Field(description="The change to report as trigger; null: none.")
    affected_resources: list[str] = Field(description="Names every diagnosis must list as affected.")
    ruled_out: Faults = Field(default_factory=list, description="Fault types that must be ruled out.")
    gaps: list[str] = Field(default_factory=list, description="Gap sources the diagnosis must report.")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if "unknown" in self.faults and len(self.faults) > 1:
            raise ValueError("faults: 'unknown' stands alone")
        if clash := set(self.ruled_out) & {*self.faults, "unknown"}:
            raise ValueError(f"ruled_out lists {sorted(clash)}, which is expected (or 'unknown')")
        return self


class Injection(_Model):
    """How the sandbox was broken: an injector by name and its parameters."""

    injector: str = Field(min_length=1, description="A fault's name in chaos.faults, or 'logs'.")
    params: dict[str, Any] = Field(default_factory=dict)


class RecordedCall(_Model):
    """One tool call as recorded at incident time: its answer, or the error the tool reported."""

    tool: ToolName
    arguments: dict[str, Any]
    result: dict[str, Any] | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Self:
        if (self.result is None) == (self.error is None):
            raise ValueError("a recorded call holds either a result or an error")
        return self


class Case(_Model):
    """One incident of the corpus."""

    format_version: Literal[1] = FORMAT_VERSION
    id: str = Field(pattern=CASE_ID_PATTERN)
    description: str = Field(min_length=1)
    recorded_at: str = Field(description="ISO-8601 time the tools were called.")
    function_name: str = Field(min_length=1)
    incident_id: str = Field(min_length=1)
    incident: dict[str, Any] = Field(description="What the supervisor was told: the alarm's signal.")
    injected: list[Injection] = Field(description="What broke the sandbox; empty for a control.")
    invocations: dict[str, int] = Field(description="The traffic's outcomes by status, for people.")
    expected: Expected
    tool_results: list[RecordedCall]

    def calls_by_key(self) -> dict[tuple[str, str], RecordedCall]:
        return {
            (call.tool, canonical_arguments(call.tool, call.arguments)): call for call in self.tool_results
        }


class CorpusError(Exception):
    """A case file that cannot be used: which file, which field, what is wrong."""

    def __init__(self, path: Path, location: str, message: str) -> None:
        super().__init__(f"{path}: {location}: {message}")
        self.path = path
        self.location = location


def _first(error: ValidationError, prefix: str = "") -> tuple[str, str]:
    first = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in first["loc"])
    return ".".join(part for part in (prefix, location) if part) or "(root)", first["msg"]


def check_calls(path: Path, case: Case) -> None:
    """Every recorded call against the tool contract, no call twice, every tool's default call there."""
    seen: dict[tuple[str, str], int] = {}
    for index, call in enumerate(case.tool_results):
        where = f"tool_results.{index}"
        try:
            key = (call.tool, canonical_arguments(call.tool, call.arguments))
        except ValidationError as error:
            raise CorpusError(path, *_first(error, f"{where}.arguments")) from None
        if key in seen:
            raise CorpusError(path, where, f"the same call as tool_results.{seen[key]}")
        seen[key] = index
        if call.result is not None:
            try:
                TOOLS[call.tool].response.model_validate(call.result)
            except ValidationError as error:
                raise CorpusError(path, *_first(error, f"{where}.result")) from None
    for tool in TOOL_NAMES:
        if (tool, canonical_arguments(tool, {"lambda_name": case.function_name})) not in seen:
            raise CorpusError(
                path,
                "tool_results",
                f"{tool} with its default arguments is not recorded (every tool must be)",
            )


def read_case(path: Path) -> Case:
    """One case file, checked: its schema, every recorded call against the tool contract, and its name."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise CorpusError(path, "(file)", str(error)) from None
    except json.JSONDecodeError as error:
        raise CorpusError(path, f"line {error.lineno}", f"not JSON: {error.msg}") from None
    try:
        case = Case.model_validate(data)
    except ValidationError as error:
        raise CorpusError(path, *_first(error)) from None
    if path.stem != case.id:
        raise CorpusError(path, "id", f"{case.id!r} is not the file's name ({path.stem!r})")
    check_calls(path, case)
    return case


def load_corpus(directory: Path) -> list[Case]:
    """Every ``*.json`` case in ``directory``, by id; CorpusError on the first broken one."""
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise CorpusError(
            directory, "(directory)", "no case files (*.json): record some with `incident-eval record`"
        )
    return [read_case(path) for path in paths]


def dump_case(case: Case) -> str:
    """Pretty JSON with sorted keys and calls in a fixed order: re-recording changes only what changed."""
    order = {tool: n for n, tool in enumerate(TOOL_NAMES)}
    calls = sorted(case.tool_results, key=lambda c: (order[c.tool], canonical_arguments(c.tool, c.arguments)))
    data = case.model_copy(update={"tool_results": calls}).model_dump(mode="json", exclude_none=True)
    data["expected"]["trigger"] = data["expected"].get("trigger")  # null is meaningful there: no trigger
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
