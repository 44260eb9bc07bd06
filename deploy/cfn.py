"""CloudFormation intrinsic functions, as the JSON the templates are written in."""

from __future__ import annotations

from typing import Any


def ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def get_att(logical_id: str, attribute: str = "Arn") -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def sub(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}


def substituted(value: Any) -> Any:
    """Strings that name a stack parameter (``${Name}``) become ``Fn::Sub``, in lists and nested objects
    too; intrinsics and everything else are kept as they are."""
    if isinstance(value, str) and "${" in value:
        return sub(value)
    if isinstance(value, list):
        return [substituted(item) for item in value]
    if isinstance(value, dict) and not any(key.startswith(("Fn::", "Ref")) for key in value):
        return {key: substituted(item) for key, item in value.items()}
    return value
