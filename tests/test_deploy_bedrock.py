"""The supervisor's Bedrock grant, resolved for given stacks and checked against the ARN forms AWS documents
for invoking a cross-Region inference profile (the profile in the calling Region, and the foundation model
in every Region the profile routes to, reached only through the profile):
https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html,
https://docs.aws.amazon.com/bedrock/latest/userguide/geographic-cross-region-inference.html,
https://docs.aws.amazon.com/bedrock/latest/userguide/global-cross-region-inference.html.
Every expected value is written out here, never built by the template's code."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deploy import template
from supervisor.permissions import PLAN_READ_ACTIONS
from tests.cfn_support import ResolvedStack

ACCOUNT = "123456789012"
SONNET_US = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SONNET_US_PROFILE_ARN = (
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)
SONNET_MODEL_ARN = "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"


def _stack(profile_id: str | None, region: str) -> ResolvedStack:
    parameters = {} if profile_id is None else {"BedrockInferenceProfileId": profile_id}
    pseudo = {"AWS::Region": region, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws"}
    return ResolvedStack(parameters, template.build(), pseudo)


def _supervisor_statements(stack: ResolvedStack) -> list[dict[str, Any]]:
    role = stack.document["Resources"]["SupervisorRole"]["Properties"]
    (policy,) = role["Policies"]
    statements: list[dict[str, Any]] = stack.resolve(policy["PolicyDocument"]["Statement"])
    return statements


def _bedrock_statements(stack: ResolvedStack) -> list[dict[str, Any]]:
    return [s for s in _supervisor_statements(stack) if any(a.startswith("bedrock:") for a in s["Action"])]


def _iam_matches(pattern: str, arn: str) -> bool:
    """IAM's resource matching: '*' any run of characters, '?' one, everything else literally."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, arn) is not None


def test_the_default_profile_is_granted_exactly_in_aws_s_documented_forms() -> None:
    assert _bedrock_statements(_stack(None, "us-east-1")) == [
        {
            "Sid": "BedrockInferenceProfile",
            "Effect": "Allow",
            "Action": ["bedrock:InvokeModel"],
            "Resource": [SONNET_US_PROFILE_ARN],
        },
        {
            "Sid": "BedrockModelThroughProfile",
            "Effect": "Allow",
            "Action": ["bedrock:InvokeModel"],
            "Resource": [SONNET_MODEL_ARN],
            "Condition": {"StringEquals": {"bedrock:InferenceProfileArn": SONNET_US_PROFILE_ARN}},
        },
    ]


def test_the_supervisor_invokes_the_profile_it_is_granted() -> None:
    stack = _stack(SONNET_US, "us-east-1")
    function = stack.document["Resources"]["SupervisorFunction"]["Properties"]
    variables = stack.resolve(function["Environment"])["Variables"]
    assert variables["SUPERVISOR_MODEL"] == "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.mark.parametrize(
    ("profile_id", "region", "profile_arn", "model_arn"),
    [
        (
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "eu-west-1",
            "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/"
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
        (
            "eu.anthropic.claude-sonnet-4-6",
            "eu-central-1",
            "arn:aws:bedrock:eu-central-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-6",
            "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-6",
        ),
    ],
)
def test_one_parameter_names_both_the_profile_and_its_model(
    profile_id: str, region: str, profile_arn: str, model_arn: str
) -> None:
    profile, model = _bedrock_statements(_stack(profile_id, region))
    assert profile["Resource"] == [profile_arn]
    assert model["Resource"] == [model_arn]
    assert model["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}}


def test_the_model_grant_covers_every_region_the_profile_routes_to_and_nothing_else() -> None:
    """AWS's example for this profile (source us-east-1; destinations us-east-1, us-east-2, us-west-2)
    and the Region-less ARN of a global profile's model are covered; another model, a model ARN in
    another partition and the profile of another account are not."""
    profile, model = _bedrock_statements(_stack(SONNET_US, "us-east-1"))
    ((pattern,), (profile_pattern,)) = model["Resource"], profile["Resource"]
    for region in ("us-east-1", "us-east-2", "us-west-2", ""):
        arn = f"arn:aws:bedrock:{region}::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"
        assert _iam_matches(pattern, arn), arn
    for arn in (
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0-x",
        "arn:aws-cn:bedrock:cn-north-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
    ):
        assert not _iam_matches(pattern, arn), arn
    other_account = SONNET_US_PROFILE_ARN.replace(ACCOUNT, "210987654321")
    assert not _iam_matches(profile_pattern, other_account)


def test_no_supervisor_grant_is_a_wildcard_model_or_profile() -> None:
    """A missing model grant, or '*' in its place, fails here as well as in the exact comparison."""
    statements = _supervisor_statements(_stack(SONNET_US, "us-east-1"))
    reads = [s for s in statements if s.get("Sid") == "PlanReads"]  # a plan's preconditions, read
    assert [a.split(":")[1].startswith(("Get", "List", "Describe")) for s in reads for a in s["Action"]] == [
        True
    ] * len(PLAN_READ_ACTIONS)
    resources = [resource for s in statements if s not in reads for resource in s["Resource"]]
    assert "*" not in resources
    assert SONNET_MODEL_ARN in resources
    assert SONNET_US_PROFILE_ARN in resources
    bedrock = [r for r in resources if r.startswith("arn:aws:bedrock:")]
    assert not any(r.endswith(("/*", ":*")) for r in bedrock), bedrock
    assert {a for s in statements for a in s["Action"] if a.startswith("bedrock:")} == {"bedrock:InvokeModel"}


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("eu.anthropic.claude-sonnet-4-6", True),
        ("apac.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("jp.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("au.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", False),  # a bare model id: no profile
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", False),
        ("xx.anthropic.claude-sonnet-4-5-20250929-v1:0", False),
        ("US.anthropic.claude-sonnet-4-5-20250929-v1:0", False),
        ("us.anthropic.claude.sonnet-4-5", False),  # a fourth part would split the model id wrongly
        ("us.anthropic.*", False),
        ("*", False),
        ("us.*", False),
        (SONNET_US_PROFILE_ARN, False),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0 ", False),
        ("", False),
    ],
)
def test_the_profile_parameter_accepts_only_a_geo_prefixed_profile_id(value: str, allowed: bool) -> None:
    parameter = template.build()["Parameters"]["BedrockInferenceProfileId"]
    assert bool(re.fullmatch(parameter["AllowedPattern"], value)) is allowed
    assert re.fullmatch(parameter["AllowedPattern"], parameter["Default"])
    assert "geographic prefix" in parameter["ConstraintDescription"]
    assert "us.anthropic.claude-sonnet-4-5-20250929-v1:0" in parameter["ConstraintDescription"]
