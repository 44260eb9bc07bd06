"""CloudFormation intrinsic functions, as the JSON the templates are written in."""

from __future__ import annotations


def ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def get_att(logical_id: str, attribute: str = "Arn") -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def sub(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}
