"""The IAM policy evaluator of the diagnosis: decisions by action AND resource, boundaries, conditions,
unreadable documents, the statement paths it cites, and the denials it reads from AWS error messages."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.faults.iam import _grants_log_writes, _without_s3
from supervisor.diagnosis.iam_policy import (
    DeniedCall,
    action_matches,
    evaluate,
    evaluate_role,
    parse_denial,
    resource_matches,
    statements,
)
from supervisor.diagnosis.paths import resolve

BUCKET = "arn:aws:s3:::input-bucket"
OTHER = "arn:aws:s3:::other-bucket"
KEY = f"{BUCKET}/incoming/file.json"
TABLE = "arn:aws:dynamodb:ca-central-1:123456789012:table/orders"
INLINE = "inline_policies.data-processor-access"
NO_BOUNDARY: dict[str, Any] = {}


def doc(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def allow(action: str | list[str], resource: str | list[str] = "*", **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def deny(action: str | list[str], resource: str | list[str] = "*", **extra: Any) -> dict[str, Any]:
    return {"Effect": "Deny", "Action": action, "Resource": resource, **extra}


def role(
    *inline: dict[str, Any],
    attached: tuple[dict[str, Any] | None, ...] = (),
    boundary: dict[str, Any] | None = NO_BOUNDARY,
    gaps: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A get_iam_state response: inline policies data-processor-access, extra-1, ...; ``boundary`` {} is
    no boundary, None a boundary whose document could not be read."""
    names = ["data-processor-access", *(f"extra-{i}" for i in range(1, len(inline)))][: len(inline)]
    return {
        "role_name": "data-processor-role",
        "role_arn": "arn:aws:iam::123456789012:role/data-processor-role",
        "inline_policies": dict(zip(names, inline, strict=True)),
        "attached_policies": [
            {
                "policy_name": f"managed-{i}",
                "policy_arn": f"arn:aws:iam::123456789012:policy/managed-{i}",
                "default_version_id": "v1" if document is not None else None,
                "document": document,
            }
            for i, document in enumerate(attached)
        ],
        "permissions_boundary": None
        if boundary is NO_BOUNDARY
        else {
            "type": "Policy",
            "arn": "arn:aws:iam::123456789012:policy/boundary",
            "default_version_id": "v1" if boundary is not None else None,
            "document": boundary,
        },
        "error": None,
        "gaps": [{"source": source, "error_code": "AccessDenied", "meaning": "..."} for source in gaps],
    }


S0, S1 = f"{INLINE}.Statement.0", f"{INLINE}.Statement.1"
B0, B1 = "permissions_boundary.document.Statement.0", "permissions_boundary.document.Statement.1"

CASES = [
    # action and resource
    pytest.param(role(doc(allow("s3:GetObject", f"{BUCKET}/*"))), "s3:GetObject", KEY, "allowed", [S0],
                 id="grant-on-right-bucket-allowed"),
    pytest.param(role(doc(allow("s3:GetObject", f"{OTHER}/*"))), "s3:GetObject", KEY, "implicit_deny", [],
                 id="grant-on-wrong-bucket-implicit-deny"),
    pytest.param(role(doc(allow("s3:GetObject", [f"{OTHER}/*", f"{BUCKET}/*"]))), "s3:GetObject", KEY,
                 "allowed", [S0], id="resource-list-one-matches"),
    pytest.param(role(doc(allow("s3:GetObject", f"{BUCKET}/*"))), "s3:GetObject", BUCKET, "implicit_deny", [],
                 id="bucket-arn-is-not-object-arn"),
    pytest.param(role(doc(allow("s3:GetObject", "arn:aws:s3:::input-bucke?/*"))), "s3:GetObject", KEY,
                 "allowed", [S0], id="resource-question-mark"),
    pytest.param(role(doc(allow("s3:GetObject", "arn:aws:s3:::Input-Bucket/*"))), "s3:GetObject", KEY,
                 "implicit_deny", [], id="resource-case-sensitive"),
    pytest.param(role(doc({"Effect": "Allow", "Action": "s3:GetObject"})), "s3:GetObject", KEY, "allowed",
                 [S0], id="no-resource-matches-any"),
    # action patterns
    pytest.param(role(doc(allow("s3:Get*"))), "s3:GetObject", KEY, "allowed", [S0], id="get-star-covers"),
    pytest.param(role(doc(allow("s3:Get*"))), "s3:PutObject", KEY, "implicit_deny", [],
                 id="get-star-not-put"),
    pytest.param(role(doc(allow("s3:Get*"))), "*:GetObject", None, "allowed", [S0],
                 id="get-star-covers-serviceless"),
    pytest.param(role(doc(allow("s3:Put*"))), "*:GetObject", None, "implicit_deny", [],
                 id="put-star-not-serviceless-get"),
    pytest.param(role(doc(allow("iam:*"))), "*:GetObject", None, "allowed", [S0],
                 id="iam-star-covers-serviceless"),
    pytest.param(role(doc(allow("s3:GetObjec?"))), "s3:GetObject", KEY, "allowed", [S0],
                 id="action-question-mark"),
    pytest.param(role(doc(allow("*"))), "dynamodb:GetItem", TABLE, "allowed", [S0], id="star-covers-all"),
    pytest.param(role(doc(allow("S3:getobject"))), "s3:GetObject", KEY, "allowed", [S0],
                 id="pattern-case-insensitive"),
    pytest.param(role(doc(allow("s3:GetObject"))), "S3:GETOBJECT", KEY, "allowed", [S0],
                 id="action-case-insensitive"),
    pytest.param(role(doc(allow(["dynamodb:GetItem", "dynamodb:PutItem"], TABLE))), "dynamodb:Query", TABLE,
                 "implicit_deny", [], id="action-list-lacks-it"),
    # NotAction / NotResource
    pytest.param(role(doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})), "s3:GetObject", KEY,
                 "allowed", [S0], id="notaction-allows-s3"),
    pytest.param(role(doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})), "iam:PassRole",
                 "arn:aws:iam::123456789012:role/x", "implicit_deny", [], id="notaction-excludes-iam"),
    pytest.param(role(doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})), "*:GetObject", None,
                 "allowed", [S0], id="notaction-serviceless"),
    pytest.param(role(doc({"Effect": "Allow", "Action": "s3:*", "NotResource": f"{OTHER}/*"})),
                 "s3:GetObject", KEY, "allowed", [S0], id="notresource-allows-other"),
    pytest.param(role(doc({"Effect": "Allow", "Action": "s3:*", "NotResource": f"{OTHER}/*"})),
                 "s3:GetObject", f"{OTHER}/x", "implicit_deny", [], id="notresource-excludes"),
    pytest.param(role(doc({"Effect": "Allow", "Action": "s3:*", "NotResource": f"{OTHER}/*"})),
                 "s3:GetObject", None, "conditional", [S0], id="notresource-unknown-resource"),
    pytest.param(role(doc(allow("s3:*"), {"Effect": "Deny", "Action": "s3:*", "NotResource": "*"})),
                 "s3:GetObject", None, "allowed", [S0], id="notresource-star-never-applies"),
    # explicit deny
    pytest.param(role(doc(allow("s3:*"), deny("s3:GetObject", f"{OTHER}/*"))), "s3:GetObject", KEY,
                 "allowed", [S0], id="deny-on-other-resource-no-effect"),
    pytest.param(role(doc(allow("s3:*"), deny("s3:GetObject", f"{BUCKET}/*"))), "s3:GetObject", KEY,
                 "denied", [S1], id="deny-on-this-resource-wins"),
    pytest.param(role(doc(allow("s3:*")), doc(deny("s3:*"))), "s3:GetObject", KEY, "denied",
                 ["inline_policies.extra-1.Statement.0"], id="deny-in-other-policy-wins"),
    pytest.param(role(doc(allow("*"), deny("*"))), "*:GetObject", None, "denied", [S1],
                 id="deny-star-decides-serviceless"),
    pytest.param(role(doc(allow("*"), deny("iam:*"))), "*:GetObject", None, "conditional", [S1],
                 id="service-specific-deny-of-serviceless-is-conditional"),
    pytest.param(role(doc({"Effect": "deny", "Action": "*", "Resource": "*"}, allow("s3:*"))), "s3:GetObject",
                 KEY, "allowed", [S1], id="invalid-effect-ignored"),
    # conditions and variables
    pytest.param(role(doc(allow("s3:GetObject", Condition={"Bool": {"aws:SecureTransport": "true"}}))),
                 "s3:GetObject", KEY, "conditional", [S0], id="condition-on-allow"),
    pytest.param(role(doc(allow("s3:*"), deny("s3:*", Condition={"IpAddress": {"aws:SourceIp": "1.2.3.4"}}))),
                 "s3:GetObject", KEY, "conditional", [S1], id="conditional-deny-over-allow"),
    pytest.param(role(doc(deny("s3:*", Condition={"IpAddress": {"aws:SourceIp": "1.2.3.4"}}))),
                 "s3:GetObject", KEY, "implicit_deny", [], id="conditional-deny-without-allow"),
    pytest.param(role(doc(allow("s3:GetObject", "arn:aws:s3:::input-bucket/${aws:username}/*"))),
                 "s3:GetObject", KEY, "conditional", [S0], id="policy-variable-conditional"),
    pytest.param(role(doc(allow("s3:GetObject", "arn:aws:s3:::other-bucket/${aws:username}/*"))),
                 "s3:GetObject", KEY, "implicit_deny", [], id="policy-variable-cannot-match"),
    pytest.param(role(doc(allow("s3:GetObject", "arn:aws:s3:::input-bucket/${*}"))), "s3:GetObject", KEY,
                 "implicit_deny", [], id="literal-star-variable"),
    # unknown resource
    pytest.param(role(doc(allow("s3:GetObject"))), "s3:GetObject", None, "allowed", [S0],
                 id="unknown-resource-star-allowed"),
    pytest.param(role(doc(allow("s3:GetObject", f"{BUCKET}/*"))), "s3:GetObject", None, "conditional", [S0],
                 id="unknown-resource-scoped-conditional"),
    pytest.param(role(doc(allow("s3:GetObject"), deny("s3:GetObject", f"{OTHER}/*"))), "s3:GetObject", None,
                 "conditional", [S1], id="unknown-resource-scoped-deny"),
    # statement shapes and attached policies
    pytest.param(role({"Statement": allow("s3:GetObject")}), "s3:GetObject", KEY, "allowed",
                 [f"{INLINE}.Statement"], id="statement-as-dict"),
    pytest.param(role(attached=(doc(allow("logs:*")), doc(allow("ec2:*"), allow("sqs:*"), allow("s3:Get*")))),
                 "s3:GetObject", KEY, "allowed", ["attached_policies.1.document.Statement.2"],
                 id="attached-policy-path"),
    pytest.param(role(doc(allow("logs:*")), attached=(None,)), "s3:GetObject", KEY, "unknown", [],
                 id="attached-unreadable-unknown"),
    pytest.param(role(doc(allow("s3:*")), attached=(None,)), "s3:GetObject", KEY, "unknown", [S0],
                 id="attached-unreadable-may-deny"),
    pytest.param(role(doc(deny("s3:*")), attached=(None,)), "s3:GetObject", KEY, "denied", [S0],
                 id="attached-unreadable-deny-decides"),
    pytest.param(role(doc(allow("s3:*")), gaps=("iam:GetRolePolicy of inline policy x of role r",)),
                 "s3:GetObject", KEY, "unknown", [S0], id="inline-gap-unknown"),
    pytest.param(role(doc(allow("s3:*")), gaps=("iam:GetPolicy/GetPolicyVersion of managed policy arn",)),
                 "s3:GetObject", KEY, "allowed", [S0], id="managed-policy-gap-covered-by-document"),
    pytest.param(role(doc(allow("s3:*")), gaps=("iam:GetRole of role r",)), "s3:GetObject", KEY, "unknown",
                 [S0], id="role-gap-boundary-unknown"),
    # permissions boundary
    pytest.param(role(doc(allow("s3:GetObject", f"{BUCKET}/*")), boundary=doc(allow(["logs:*", "sqs:*"]))),
                 "s3:GetObject", KEY, "boundary_excludes", [], id="boundary-excludes"),
    pytest.param(role(doc(allow("s3:*")), boundary=doc(allow("*"), deny("s3:GetObject"))), "s3:GetObject",
                 KEY, "boundary_excludes", [B1], id="boundary-denies"),
    pytest.param(role(doc(allow("s3:GetObject", f"{BUCKET}/*")), boundary=doc(allow("s3:*"))),
                 "s3:GetObject", KEY, "allowed", [S0, B0], id="boundary-allows"),
    pytest.param(role(doc(allow("s3:GetObject", f"{BUCKET}/*")), boundary=doc(allow("s3:*", f"{OTHER}/*"))),
                 "s3:GetObject", KEY, "boundary_excludes", [], id="boundary-on-other-resource"),
    pytest.param(role(doc(allow("s3:*")), boundary=None), "s3:GetObject", KEY, "unknown", [S0],
                 id="boundary-unreadable"),
    pytest.param(role(doc(allow("logs:*")), boundary=None), "s3:GetObject", KEY, "implicit_deny", [],
                 id="boundary-unreadable-identity-lacks"),
    pytest.param(role(doc(allow("s3:*")), boundary=doc(allow("s3:*", Condition={"x": {"y": "z"}}))),
                 "s3:GetObject", KEY, "conditional", [B0], id="boundary-conditional"),
    pytest.param(role(doc(deny("s3:*")), boundary=doc(allow("logs:*"))), "s3:GetObject", KEY, "denied", [S0],
                 id="identity-deny-before-boundary"),
]  # fmt: skip


@pytest.mark.parametrize(("state", "action", "resource", "decision", "deciding"), CASES)
def test_decision(
    state: dict[str, Any], action: str, resource: str | None, decision: str, deciding: list[str]
) -> None:
    result = evaluate_role(state, action, resource)
    assert (result.decision, [m.path for m in result.deciding]) == (decision, deciding), result.reason
    assert result.allowed is (decision == "allowed")
    for match in result.deciding:  # every cited path resolves to the statement, as written
        assert resolve(state, match.path) == match.statement.statement
    if result.deciding:  # a caveat says why each conditional statement may not apply; certain ones have none
        assert all(m.caveat for m in result.deciding) is (decision == "conditional")


def test_wrong_bucket_names_the_near_miss() -> None:
    result = evaluate_role(role(doc(allow("s3:GetObject", f"{OTHER}/*"))), "s3:GetObject", KEY)
    assert [r.path for r in result.near_misses] == [S0]
    assert result.near_misses[0].resource == f"{OTHER}/*"
    assert "other resources only" in result.reason


def test_statement_fields_as_written() -> None:
    (first, second) = statements(
        doc(
            {"Sid": "Read", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": f"{BUCKET}/*"},
            {"Effect": "Deny", "NotAction": "iam:*", "NotResource": "*", "Condition": {"Bool": {"a": "b"}}},
        ),
        "attached_policies.0.document",
    )
    assert (first.path, first.sid, first.effect, first.action, first.resource, first.has_condition) == (
        "attached_policies.0.document.Statement.0",
        "Read",
        "Allow",
        ("s3:GetObject",),
        f"{BUCKET}/*",
        False,
    )
    assert (second.action, second.not_action, second.not_resource, second.has_condition) == (
        None,
        "iam:*",
        "*",
        True,
    )


def test_unreadable_policies_are_listed() -> None:
    state = role(
        doc(allow("logs:*")), attached=(doc(allow("sqs:*")), None), gaps=("iam:ListRolePolicies of role r",)
    )
    result = evaluate_role(state, "s3:GetObject", KEY)
    assert result.unreadable == ("attached_policies.1.document", "gaps.0")
    assert (result.identity, result.decision) == ("unknown", "unknown")
    assert "attached_policies.1.document" in result.reason


def test_boundary_result_and_identity() -> None:
    result = evaluate_role(role(doc(allow("s3:*")), boundary=doc(allow("logs:*"))), "s3:GetObject", KEY)
    assert result.identity == "allowed"
    assert result.boundary is not None
    assert (result.boundary.path, result.boundary.decision) == (
        "permissions_boundary.document",
        "implicit_deny",
    )
    unreadable = evaluate_role(role(doc(allow("s3:*")), boundary=None), "s3:GetObject", KEY)
    assert unreadable.boundary is not None
    assert unreadable.boundary.decision == "unknown"
    assert "permissions_boundary.document" in unreadable.reason
    assert evaluate_role(role(doc(allow("s3:*"))), "s3:GetObject", KEY).boundary is None


def test_conditional_caveats_say_why() -> None:
    condition = evaluate_role(role(doc(allow("s3:*", Condition={"x": {}}))), "s3:GetObject", KEY)
    variable = evaluate_role(role(doc(allow("s3:*", f"{BUCKET}/${{aws:userid}}"))), "s3:GetObject", KEY)
    scoped = evaluate_role(role(doc(allow("s3:*", f"{BUCKET}/*"))), "s3:GetObject", None)
    assert "Condition" in str(condition.deciding[0].caveat)
    assert "policy variable" in str(variable.deciding[0].caveat)
    assert "resource is unknown" in str(scoped.deciding[0].caveat)


def test_evaluate_raw_documents_and_service_known() -> None:
    result = evaluate(
        [("a", doc(allow("s3:Get*"))), ("b", None)],
        "*:GetObject",
        None,
        boundary=("bound", doc(allow("*"))),
    )
    assert (result.decision, result.unreadable, result.service_known) == ("unknown", ("b",), False)
    assert [m.path for m in result.matches] == ["a.Statement.0", "bound.Statement.0"]
    assert evaluate([("a", doc(allow("s3:Get*")))], "s3:GetObject", KEY).service_known


@pytest.mark.parametrize(
    ("pattern", "action", "expected"),
    [
        ("s3:Get*", "s3:GetObject", True),
        ("s3:Get*", "s3:PutObject", False),
        ("s3:Get*", "*:GetObject", True),
        ("iam:*", "*:GetObject", True),
        ("s3:Put*", "*:GetObject", False),
        ("*", "*:GetObject", True),
        ("s3:*", "s3:Get*", True),  # a statement's own pattern, read as an action (chaos does this)
        ("s3:*", "*", False),
        ("S3:GETOBJECT", "s3:getobject", True),
        ("s3:GetObject", "s3:GetObjectAcl", False),
    ],
)
def test_action_matches(pattern: str, action: str, expected: bool) -> None:
    assert action_matches(pattern, action) is expected


@pytest.mark.parametrize(
    ("pattern", "resource", "expected"),
    [
        ("*", KEY, True),
        (f"{BUCKET}/*", KEY, True),
        (f"{BUCKET}/*", BUCKET, False),
        ("arn:aws:s3:::input-*", KEY, True),
        ("arn:aws:s3:::INPUT-BUCKET/*", KEY, False),
        ("arn:aws:logs:*:*:*", "arn:aws:logs:ca-central-1:1:log-group:/aws/lambda/f:log-stream:s", True),
        (f"{BUCKET}/${{aws:username}}", KEY, False),  # a variable is never a certain match
        ("arn:aws:s3:::b/${?}", "arn:aws:s3:::b/?", True),
        ("arn:aws:s3:::b/${?}", "arn:aws:s3:::b/x", False),
    ],
)
def test_resource_matches(pattern: str, resource: str, expected: bool) -> None:
    assert resource_matches(pattern, resource) is expected


USER = "User: arn:aws:sts::123456789012:assumed-role/r/s is"
S3_DENIED = (
    f'{USER} not authorized to perform: s3:GetObject on resource: "arn:aws:s3:::bucket/key" '
    "because no identity-based policy allows the s3:GetObject action"
)
DDB_DENIED = (
    f"{USER} not authorized to perform: dynamodb:GetItem on resource: {TABLE} "
    "because no identity-based policy allows the dynamodb:GetItem action"
)
DDB_BOTO = f"An error occurred (AccessDeniedException) when calling the GetItem operation: {DDB_DENIED}"
SQS = "is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:ca-central-1:1:q"
ESCAPED = (
    'not authorized to perform: s3:PutObject on resource: \\"arn:aws:s3:::b/k\\" '
    "with an explicit deny in a permissions boundary"
)
KMS = (
    "User: u is not authorized to perform: kms:Decrypt on resource: arn:aws:kms:r:1:key/k "
    "with an explicit deny in an identity-based policy"
)
NO_BOUNDARY_ALLOWS = (
    'User: u is not authorized to perform: s3:GetObject on resource: "arn:aws:s3:::b/k" '
    "because no permissions boundary allows the s3:GetObject action"
)
S3_BOTO = "An error occurred (AccessDenied) when calling the GetObject operation: Access Denied"
EC2_BOTO = "An error occurred (UnauthorizedOperation) when calling the CreateNetworkInterface operation"
DENIALS = [
    pytest.param(S3_DENIED, "s3:GetObject", "arn:aws:s3:::bucket/key", "no_allow", "identity-based policy",
                 None, S3_DENIED, id="quoted-resource"),
    pytest.param(f"[ERROR] ClientError: {DDB_BOTO}\nTraceback", "dynamodb:GetItem", TABLE, "no_allow",
                 "identity-based policy", "AccessDeniedException", DDB_BOTO, id="bare-resource-boto-prefix"),
    pytest.param(f"{USER} not authorized to perform: logs:PutLogEvents", "logs:PutLogEvents", None, None,
                 None, None, f"{USER} not authorized to perform: logs:PutLogEvents", id="no-resource"),
    pytest.param(f"x {SQS}.", "sqs:SendMessage", "arn:aws:sqs:ca-central-1:1:q", None, None, None, SQS[3:],
                 id="bare-resource-ending-sentence"),
    pytest.param(f'{{"errorMessage": "... {ESCAPED}"}}', "s3:PutObject", "arn:aws:s3:::b/k", "explicit_deny",
                 "permissions boundary", None, ESCAPED, id="json-escaped-quotes-boundary-deny"),
    pytest.param(KMS, "kms:Decrypt", "arn:aws:kms:r:1:key/k", "explicit_deny", "identity-based policy", None,
                 KMS, id="explicit-deny-identity"),
    pytest.param(NO_BOUNDARY_ALLOWS, "s3:GetObject", "arn:aws:s3:::b/k", "no_allow", "permissions boundary",
                 None, NO_BOUNDARY_ALLOWS, id="no-boundary-allows"),
    pytest.param(f"botocore.exceptions.ClientError: {S3_BOTO}", "*:GetObject", None, None, None,
                 "AccessDenied", S3_BOTO, id="boto-access-denied"),
    pytest.param(f"{EC2_BOTO}: You are not authorized to perform this operation.", "*:CreateNetworkInterface",
                 None, None, None, "UnauthorizedOperation", EC2_BOTO, id="boto-unauthorized-operation"),
]  # fmt: skip


@pytest.mark.parametrize(("message", "action", "resource", "reason", "policy_type", "code", "quote"), DENIALS)
def test_parse_denial(
    message: str,
    action: str,
    resource: str | None,
    reason: str | None,
    policy_type: str | None,
    code: str | None,
    quote: str,
) -> None:
    assert parse_denial(message) == DeniedCall(action, resource, reason, policy_type, code, quote)  # type: ignore[arg-type]
    assert quote in message


@pytest.mark.parametrize(
    "message",
    [
        "An error occurred (NoSuchKey) when calling the GetObject operation: The key does not exist",
        "Task timed out after 3.00 seconds",
        "processed 12 records; not authorized users: 0",
    ],
    ids=["other-error-code", "timeout", "no-denial"],
)
def test_parse_denial_none(message: str) -> None:
    assert parse_denial(message) is None


def test_denial_feeds_evaluation() -> None:
    """The key bug: a grant on the wrong bucket is not a grant of the denied call."""
    denied = parse_denial(S3_DENIED)
    assert denied is not None
    state = role(doc(allow("s3:GetObject", f"{OTHER}/*")))
    assert evaluate_role(state, denied.action, denied.resource).decision == "implicit_deny"
    state = role(doc(allow("s3:GetObject", "arn:aws:s3:::bucket/*")))
    assert evaluate_role(state, denied.action, denied.resource).decision == "allowed"


# --------------------------------------------------------------------------- the chaos injector's use


def test_chaos_removes_s3_actions_only() -> None:
    document = doc(
        {"Sid": "Read", "Effect": "Allow", "Action": ["s3:GetObject", "sqs:SendMessage"], "Resource": "*"},
        allow("S3:ListBucket", BUCKET),
        {"Effect": "Allow", "NotAction": "s3:*", "Resource": "*"},
        allow("*"),
    )
    assert _without_s3(document) == doc(
        {"Sid": "Read", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"},
        {"Effect": "Allow", "NotAction": "s3:*", "Resource": "*"},
        allow("*"),
    )
    assert _without_s3(doc(allow(["s3:GetObject", "s3:PutObject"]))) is None


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (doc(allow(["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"])), True),
        (doc(allow("logs:Put*", "arn:aws:logs:*:*:*")), True),
        (doc(allow("logs:CreateLogGroup")), False),
        (doc(allow(["ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface"])), False),
        (doc(deny("logs:PutLogEvents")), False),
    ],
    ids=["lambda-basic", "scoped-put", "group-only", "vpc", "deny-only"],
)
def test_chaos_log_write_grants(document: dict[str, Any], expected: bool) -> None:
    assert _grants_log_writes(document) is expected
