"""Just enough of CloudFormation to read a generated template under given parameters, for what moto's
CloudFormation cannot show (it keeps AWS::NoValue as null inside lists and ignores Rules)."""

from __future__ import annotations

import re
from typing import Any

from deploy import mcp_service

NO_VALUE = object()  # AWS::NoValue, dropped where it stands
PSEUDO = {
    "AWS::Region": "eu-west-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
}
LOAD_BALANCER_NAME = "incident-lb-123.eu-west-1.elb.amazonaws.com"


class ResolvedStack:
    """A template (the MCP service's unless ``document`` is given) under given parameters (and pseudo
    parameters, PSEUDO's unless given): defaults, conditions, Ref, Fn::If, Fn::Sub, Fn::Join, Fn::Split,
    Fn::Select, Fn::GetAtt, AWS::NoValue dropped from lists, and the Rules' assertions. A resource's Ref is
    ``ref:<logical id>``."""

    def __init__(
        self,
        parameters: dict[str, str],
        document: dict[str, Any] | None = None,
        pseudo: dict[str, str] | None = None,
    ) -> None:
        self.document = document or mcp_service.build()
        defaults = {name: str(spec.get("Default", "")) for name, spec in self.document["Parameters"].items()}
        unknown = set(parameters) - set(defaults)
        assert not unknown, unknown
        assert set(pseudo or {}) <= set(PSEUDO), pseudo
        self.values = PSEUDO | (pseudo or {}) | defaults | parameters

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.document["Conditions"][name]))

    def _variable(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        if name.endswith(".Arn"):  # as Fn::GetAtt's Arn below
            return f"arn:{name.removesuffix('.Arn')}"
        assert name == "LoadBalancer.DNSName", name
        return LOAD_BALANCER_NAME

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [value for value in map(self.resolve, node) if value is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((function, argument),) = node.items()
            if function == "Ref":
                if argument == "AWS::NoValue":
                    return NO_VALUE
                return self.values.get(argument, f"ref:{argument}")
            if function == "Condition":
                return self.condition(argument)
            if function == "Fn::If":
                name, yes, no = argument
                return self.resolve(yes if self.condition(name) else no)
            if function == "Fn::Equals":
                left, right = self.resolve(argument)
                return left == right
            if function == "Fn::Not":
                (value,) = self.resolve(argument)
                return not value
            if function == "Fn::And":
                return all(self.resolve(argument))
            if function == "Fn::Join":
                separator, items = argument
                return separator.join(self.resolve(items))
            if function == "Fn::Split":
                separator, text = argument
                return self.resolve(text).split(separator)
            if function == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(index)]
            if function == "Fn::GetAtt":
                return self._variable(".".join(argument)) if argument[1] != "Arn" else f"arn:{argument[0]}"
            if function == "Fn::Sub":
                text, variables = (argument, {}) if isinstance(argument, str) else argument
                resolved = {name: self.resolve(value) for name, value in variables.items()}

                def value(match: re.Match[str]) -> str:
                    name = match[1]
                    return str(resolved[name] if name in resolved else self._variable(name))

                return re.sub(r"\$\{([^}]+)\}", value, text)
        return {key: self.resolve(value) for key, value in node.items()}

    def failed_rules(self) -> list[str]:
        """The AssertDescription of every assertion CloudFormation would fail the deploy with."""
        return [
            assertion["AssertDescription"]
            for rule in self.document["Rules"].values()
            if self.resolve(rule.get("RuleCondition", True))
            for assertion in rule["Assertions"]
            if not self.resolve(assertion["Assert"])
        ]

    def container(self, task_definition: str) -> dict[str, Any]:
        properties = self.document["Resources"][task_definition]["Properties"]
        (container,) = self.resolve(properties["ContainerDefinitions"])
        return dict(container)

    def environment(self, task_definition: str) -> dict[str, str]:
        return {e["Name"]: e["Value"] for e in self.container(task_definition)["Environment"]}

    def output(self, name: str) -> str:
        return str(self.resolve(self.document["Outputs"][name]["Value"]))
