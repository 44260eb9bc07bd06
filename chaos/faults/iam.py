"""IAM faults on the function's execution role.

- ``iam-s3``: the S3 actions are taken out of the role's inline policies (a policy left with no
  statement is deleted); restore puts every changed inline policy back as it was.
- ``iam-cloudwatch``: the managed policies that grant CloudWatch Logs writes are detached; restore
  attaches them again.
- ``iam-narrow`` (``IAM_NARROW``, ``apply(..., to_resource="arn:aws:s3:::other-bucket/*", action=None)``):
  every inline Allow statement that grants s3: actions (with ``action``, an IAM action pattern such as
  ``dynamodb:PutItem``: the Action entries it covers) keeps them, but on ``to_resource`` only (a statement
  that also grants other actions is split: those keep their Resource). The saved state is every inline
  policy with an Allow statement; restore puts back each one that differs from what was saved.
- ``iam-revoke`` (``IAM_REVOKE``, ``apply(..., action="dynamodb:PutItem")``): the Action entries of the
  inline Allow statements that ``action`` covers are taken out (a statement left with none is dropped, a
  policy left with no statement deleted); refused when nothing grants it, or when an entry it does not
  cover (``dynamodb:*``) would still grant it. The saved state is every inline policy; restore puts back
  each one that differs from what was saved.
- ``iam-deny`` (``IAM_DENY``, ``apply(..., action="s3:GetObject")``): a new inline policy ``chaos-deny``
  denies ``action`` (an IAM action pattern) on ``*``; refused when the role already has a policy of that
  name. Restore deletes it.
- ``iam-boundary`` (``IAM_BOUNDARY``, ``apply(..., exclude="s3:GetObject")``): a managed policy
  ``chaos-boundary-<role>`` (Allow ``*`` on ``*``, then Deny ``exclude`` on ``*``) becomes the role's
  permissions boundary; refused when that policy exists already. Restore puts the previous boundary back
  (or removes it, if there was none) and deletes the policy with all its versions.
- ``iam-touch`` (``IAM_TOUCH``, no parameter): every inline policy of the role is put again exactly as it is:
  a change CloudTrail records (``PutRolePolicy``) that grants and denies nothing new. Restore puts the
  saved documents back (the same ones).

Every parameter is keyword-only and required; an invalid one raises ChaosError before any change (the
prior state is saved by then: ``restore`` clears it without changing anything).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import give_up, read_unless

LOG_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")

# The injectors read policy documents with these few helpers of their own, not with the diagnostician's
# IAM evaluator: the sandbox shares no code with the diagnosis (docs/architecture.md, principle 1).


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of a policy document (``Statement`` may be one object or a list)."""
    raw = document.get("Statement", [])
    items = [raw] if isinstance(raw, dict) else raw if isinstance(raw, list) else []
    return [item for item in items if isinstance(item, dict)]


def _actions(statement: dict[str, Any]) -> list[str]:
    """A statement's ``Action`` entries (not ``NotAction``): each a pattern such as 's3:Get*' or '*'."""
    value = statement.get("Action")
    return [value] if isinstance(value, str) else [str(a) for a in value] if isinstance(value, list) else []


def _is_s3(action: str) -> bool:
    """Whether an Action entry names s3: actions ('s3:GetObject', 'S3:*', 's?:*'); a bare '*' grants
    every service and is left alone."""
    service, colon, _ = action.partition(":")
    return bool(colon) and fnmatch.fnmatchcase("s3", service.lower())


def _covers(pattern: str, action: str) -> bool:
    return fnmatch.fnmatchcase(action.lower(), pattern.lower())


def _grants_s3(document: dict[str, Any]) -> bool:
    return any(_is_s3(a) for statement in _statements(document) for a in _actions(statement))


def _without_s3(document: dict[str, Any]) -> dict[str, Any] | None:
    """The document with every s3:* action removed; None when no statement is left."""
    kept: list[dict[str, Any]] = []
    for statement in _statements(document):
        actions = [a for a in _actions(statement) if not _is_s3(a)]
        if actions:
            kept.append({**statement, "Action": actions if len(actions) > 1 else actions[0]})
        elif "Action" not in statement:  # NotAction statements are left alone
            kept.append(dict(statement))
    return document | {"Statement": kept} if kept else None


def _capture_s3(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    names = chaos.read("iam", "list_role_policies", RoleName=role)["PolicyNames"]
    policies = {}
    for name in names:
        document = chaos.read("iam", "get_role_policy", RoleName=role, PolicyName=name)["PolicyDocument"]
        if _grants_s3(document):
            policies[name] = json.dumps(document)
    if not policies:
        raise ChaosRefused(f"nothing to revoke: no inline policy of role {role} grants an s3: action")
    return {"role": role, "policies": policies}


def _apply_s3(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for name, text in prior["policies"].items():
        reduced = _without_s3(json.loads(text))
        if reduced is None:
            chaos.call(
                "iam",
                "delete_role_policy",
                RoleName=prior["role"],
                PolicyName=name,
                tolerate=("NoSuchEntity",),
            )
        else:
            chaos.call(
                "iam",
                "put_role_policy",
                RoleName=prior["role"],
                PolicyName=name,
                PolicyDocument=json.dumps(reduced),
            )


def _revert_s3(chaos: Chaos, prior: dict[str, Any]) -> None:
    for name, text in prior["policies"].items():
        chaos.call("iam", "put_role_policy", RoleName=prior["role"], PolicyName=name, PolicyDocument=text)


def _grants_log_writes(document: dict[str, Any]) -> bool:
    """Whether the document may allow a log write on some log stream: an Allow statement whose Action (or
    NotAction, by leaving it out) covers one, whatever its resources or conditions, and no Deny of it
    on every resource."""

    def covered(statement: dict[str, Any], action: str) -> bool:
        if "NotAction" in statement:
            excluded = statement["NotAction"]
            excluded = [excluded] if isinstance(excluded, str) else excluded
            return not any(_covers(str(p), action) for p in excluded)
        return any(_covers(p, action) for p in _actions(statement))

    statements = _statements(document)
    for action in LOG_WRITE_ACTIONS:
        denied = any(
            s.get("Effect") == "Deny"
            and s.get("Resource") == "*"
            and not s.get("Condition")
            and covered(s, action)
            for s in statements
        )
        if not denied and any(s.get("Effect") == "Allow" and covered(s, action) for s in statements):
            return True
    return False


def _capture_cloudwatch(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    attached = chaos.read("iam", "list_attached_role_policies", RoleName=role)["AttachedPolicies"]
    arns = []
    for policy in attached:
        version = chaos.read("iam", "get_policy", PolicyArn=policy["PolicyArn"])["Policy"]["DefaultVersionId"]
        document = chaos.read("iam", "get_policy_version", PolicyArn=policy["PolicyArn"], VersionId=version)
        if _grants_log_writes(document["PolicyVersion"]["Document"]):
            arns.append(policy["PolicyArn"])
    if not arns:
        raise ChaosRefused(
            f"nothing to detach: no managed policy attached to {role} grants CloudWatch Logs writes"
        )
    return {"role": role, "policy_arns": arns}


def _apply_cloudwatch(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for arn in prior["policy_arns"]:
        chaos.call(
            "iam", "detach_role_policy", RoleName=prior["role"], PolicyArn=arn, tolerate=("NoSuchEntity",)
        )


def _revert_cloudwatch(chaos: Chaos, prior: dict[str, Any]) -> None:
    for arn in prior["policy_arns"]:
        chaos.call("iam", "attach_role_policy", RoleName=prior["role"], PolicyArn=arn)


REVOKE_S3 = Fault(
    "iam-s3", "S3 actions removed from the role's inline policies", _capture_s3, _apply_s3, _revert_s3
)
REVOKE_CLOUDWATCH = Fault(
    "iam-cloudwatch",
    "CloudWatch Logs policy detached from the role",
    _capture_cloudwatch,
    _apply_cloudwatch,
    _revert_cloudwatch,
)
TARGETS = {"s3": (REVOKE_S3,), "cloudwatch": (REVOKE_CLOUDWATCH,), "both": (REVOKE_S3, REVOKE_CLOUDWATCH)}

DENY_POLICY_NAME = "chaos-deny"
BOUNDARY_POLICY_PREFIX = "chaos-boundary-"
_ACTION_PATTERN = re.compile(r"\*|[A-Za-z0-9-]+:[A-Za-z0-9*?]+")


def _document(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _one_or_list(actions: list[str]) -> str | list[str]:
    return actions[0] if len(actions) == 1 else actions


def _checked_action(action: str, param: str) -> str:
    if not _ACTION_PATTERN.fullmatch(action):
        raise ChaosError(
            f"{param} must be an IAM action such as s3:GetObject (or a pattern: s3:Get*), not {action!r}"
        )
    return action


def _taken(action: str | None) -> tuple[Callable[[str], bool], str]:
    """Which Action entries a fault takes (those the pattern ``action`` covers; without one, every s3:
    entry), and how to name them."""
    if action is None:
        return _is_s3, "an s3: action"
    pattern = _checked_action(action, "action")
    return (lambda entry: _covers(pattern, entry)), pattern


def _narrowed(
    document: dict[str, Any], to_resource: str, taken: Callable[[str], bool] = _is_s3
) -> dict[str, Any]:
    """The document with every Allow statement's ``taken`` actions scoped to ``to_resource`` only."""
    result: list[dict[str, Any]] = []
    for statement in _statements(document):
        scoped_actions = [a for a in _actions(statement) if taken(a)]
        if statement.get("Effect") != "Allow" or not scoped_actions:
            result.append(dict(statement))
            continue
        scoped = {k: v for k, v in statement.items() if k not in ("Resource", "NotResource")}
        others = [a for a in _actions(statement) if not taken(a)]
        if others:  # the other actions keep their scope; the split-off part gets no Sid (Sids are unique)
            result.append({**statement, "Action": _one_or_list(others)})
            scoped.pop("Sid", None)
        result.append(scoped | {"Action": _one_or_list(scoped_actions), "Resource": to_resource})
    return document | {"Statement": result}


def _inline_policies(chaos: Chaos, role: str, *, allowing: bool) -> dict[str, str]:
    """The role's inline policy documents (as JSON text); with ``allowing``, those with an Allow
    statement only."""
    policies = {}
    for name in chaos.read("iam", "list_role_policies", RoleName=role)["PolicyNames"]:
        document = chaos.read("iam", "get_role_policy", RoleName=role, PolicyName=name)["PolicyDocument"]
        if not allowing or any(s.get("Effect") == "Allow" for s in _statements(document)):
            policies[name] = json.dumps(document)
    return policies


def _capture_narrow(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    policies = _inline_policies(chaos, role, allowing=True)
    if not policies:
        raise ChaosRefused(f"nothing to narrow: no inline policy of role {role} allows an action")
    return {"role": role, "policies": policies}


def _apply_narrow(
    chaos: Chaos, target: Target, prior: dict[str, Any], *, to_resource: str, action: str | None = None
) -> None:
    if not to_resource.startswith("arn:"):
        raise ChaosError(
            f"to_resource must be an ARN such as arn:aws:s3:::other-bucket/*, not {to_resource!r}"
        )
    taken, named = _taken(action)
    changed = {
        name: _narrowed(json.loads(text), to_resource, taken) for name, text in prior["policies"].items()
    }
    changed = {name: doc for name, doc in changed.items() if doc != json.loads(prior["policies"][name])}
    if not changed:
        error = ChaosRefused(
            f"nothing to narrow: no inline Allow statement of role {prior['role']} grants {named}"
        )
        give_up(chaos, "iam-narrow", target.function_name, error, unchanged=_as_saved(chaos, prior))
    for name, document in changed.items():
        chaos.call(
            "iam",
            "put_role_policy",
            RoleName=prior["role"],
            PolicyName=name,
            PolicyDocument=json.dumps(document),
        )


def _current_policy(chaos: Chaos, role: str, name: str) -> dict[str, Any] | None:
    found = read_unless(chaos, ("NoSuchEntity",), "iam", "get_role_policy", RoleName=role, PolicyName=name)
    return None if found is None else dict(found["PolicyDocument"])


def _as_saved(chaos: Chaos, prior: dict[str, Any]) -> bool:
    """Whether every saved inline policy is as it was saved."""
    return all(
        _current_policy(chaos, prior["role"], name) == json.loads(text)
        for name, text in prior["policies"].items()
    )


def _put_back(chaos: Chaos, prior: dict[str, Any]) -> None:
    """Every saved inline policy that is not as it was saved, put back."""
    for name, text in prior["policies"].items():
        if _current_policy(chaos, prior["role"], name) != json.loads(text):
            chaos.call("iam", "put_role_policy", RoleName=prior["role"], PolicyName=name, PolicyDocument=text)


def _revoked(document: dict[str, Any], taken: Callable[[str], bool]) -> dict[str, Any] | None:
    """The document without the ``taken`` Action entries of its Allow statements; None when no statement
    is left."""
    kept: list[dict[str, Any]] = []
    for statement in _statements(document):
        actions = _actions(statement)
        left = [a for a in actions if not taken(a)] if statement.get("Effect") == "Allow" else actions
        if left == actions:
            kept.append(dict(statement))
        elif left:
            kept.append({**statement, "Action": _one_or_list(left)})
    return document | {"Statement": kept} if kept else None


def _capture_revoke(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    policies = _inline_policies(chaos, role, allowing=False)
    if not policies:
        raise ChaosRefused(f"nothing to revoke: role {role} has no inline policy")
    return {"role": role, "policies": policies}


def _still_granted(documents: dict[str, dict[str, Any] | None], action: str) -> str | None:
    """An Allow entry left in ``documents`` that covers the concrete ``action`` (none for a pattern)."""
    if any(character in action for character in "*?"):
        return None
    for name, document in documents.items():
        for statement in _statements(document or {}):
            for entry in _actions(statement):
                if statement.get("Effect") == "Allow" and _covers(entry, action):
                    return f"{entry!r} in policy {name}"
    return None


def _apply_revoke(chaos: Chaos, target: Target, prior: dict[str, Any], *, action: str) -> None:
    role, unchanged = prior["role"], _as_saved(chaos, prior)
    pattern = _checked_action(action, "action")
    saved = {name: json.loads(text) for name, text in prior["policies"].items()}
    revoked = {name: _revoked(doc, lambda entry: _covers(pattern, entry)) for name, doc in saved.items()}
    changed = {name: doc for name, doc in revoked.items() if doc != saved[name]}
    if not changed:
        error = ChaosRefused(f"nothing to revoke: no inline Allow statement of role {role} grants {pattern}")
        give_up(chaos, IAM_REVOKE_NAME, target.function_name, error, unchanged=unchanged)
    still = _still_granted(revoked, pattern)
    if still:
        error = ChaosRefused(
            f"refusing to revoke {pattern} from role {role}: {still} would still grant it (revoke takes out "
            "only the entries the action covers)"
        )
        give_up(chaos, IAM_REVOKE_NAME, target.function_name, error, unchanged=unchanged)
    for name, document in changed.items():
        if document is None:
            chaos.call(
                "iam", "delete_role_policy", RoleName=role, PolicyName=name, tolerate=("NoSuchEntity",)
            )
        else:
            chaos.call(
                "iam", "put_role_policy", RoleName=role, PolicyName=name, PolicyDocument=json.dumps(document)
            )


def _capture_deny(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    if DENY_POLICY_NAME in chaos.read("iam", "list_role_policies", RoleName=role)["PolicyNames"]:
        raise ChaosRefused(
            f"role {role} already has an inline policy named {DENY_POLICY_NAME} that no saved state accounts "
            f"for; look at it, and delete it if an earlier run left it:\n"
            f"  aws iam delete-role-policy --role-name {role} --policy-name {DENY_POLICY_NAME}"
        )
    return {"role": role, "policy": DENY_POLICY_NAME}


def _apply_deny(chaos: Chaos, target: Target, prior: dict[str, Any], *, action: str) -> None:
    document = _document(
        {"Sid": "ChaosDeny", "Effect": "Deny", "Action": _checked_action(action, "action"), "Resource": "*"}
    )
    chaos.call(
        "iam", "put_role_policy", RoleName=prior["role"], PolicyName=prior["policy"], PolicyDocument=document
    )


def _revert_deny(chaos: Chaos, prior: dict[str, Any]) -> None:
    chaos.call(
        "iam",
        "delete_role_policy",
        RoleName=prior["role"],
        PolicyName=prior["policy"],
        tolerate=("NoSuchEntity",),
    )


def _policy_exists(chaos: Chaos, arn: str) -> bool:
    try:
        chaos.read("iam", "get_policy", PolicyArn=arn)
    except ChaosError as error:
        if "NoSuchEntity" in str(error):
            return False
        raise
    return True


def _capture_boundary(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    boundary = chaos.read("iam", "get_role", RoleName=role)["Role"].get("PermissionsBoundary") or {}
    _, partition, _, _, account, _ = str(target.configuration["Role"]).split(":", 5)
    policy_arn = f"arn:{partition}:iam::{account}:policy/{BOUNDARY_POLICY_PREFIX}{role}"
    if _policy_exists(chaos, policy_arn):
        raise ChaosRefused(
            f"a managed policy {policy_arn} exists already and no saved state accounts for it; look at it, "
            "and delete it (and its versions) if an earlier run left it"
        )
    return {"role": role, "boundary": boundary.get("PermissionsBoundaryArn"), "policy_arn": policy_arn}


def _apply_boundary(chaos: Chaos, target: Target, prior: dict[str, Any], *, exclude: str) -> None:
    document = _document(
        {"Sid": "AllowEverythingElse", "Effect": "Allow", "Action": "*", "Resource": "*"},
        {
            "Sid": "ChaosExclude",
            "Effect": "Deny",
            "Action": _checked_action(exclude, "exclude"),
            "Resource": "*",
        },
    )
    arn, role = prior["policy_arn"], prior["role"]
    if _policy_exists(chaos, arn):  # injected again: a new default version replaces the document
        _delete_old_versions(chaos, arn)
        chaos.call("iam", "create_policy_version", PolicyArn=arn, PolicyDocument=document, SetAsDefault=True)
    else:
        chaos.call(
            "iam",
            "create_policy",
            PolicyName=arn.rsplit("/", 1)[-1],
            PolicyDocument=document,
            Description=f"incident-chaos: permissions boundary of {role}; removed by restore",
        )
    chaos.call("iam", "put_role_permissions_boundary", RoleName=role, PermissionsBoundary=arn)


def _delete_old_versions(chaos: Chaos, arn: str) -> None:
    versions = chaos.read("iam", "list_policy_versions", PolicyArn=arn)["Versions"]
    for version in versions:
        if not version["IsDefaultVersion"]:
            chaos.call(
                "iam",
                "delete_policy_version",
                PolicyArn=arn,
                VersionId=version["VersionId"],
                tolerate=("NoSuchEntity",),
            )


def _revert_boundary(chaos: Chaos, prior: dict[str, Any]) -> None:
    role, arn = prior["role"], prior["policy_arn"]
    if prior["boundary"] is None:
        chaos.call("iam", "delete_role_permissions_boundary", RoleName=role, tolerate=("NoSuchEntity",))
    else:
        chaos.call(
            "iam", "put_role_permissions_boundary", RoleName=role, PermissionsBoundary=prior["boundary"]
        )
    if _policy_exists(chaos, arn):
        _delete_old_versions(chaos, arn)
        chaos.call("iam", "delete_policy", PolicyArn=arn, tolerate=("NoSuchEntity",))


def _capture_touch(chaos: Chaos, target: Target) -> dict[str, Any]:
    role = target.role_name
    policies = {
        name: json.dumps(
            chaos.read("iam", "get_role_policy", RoleName=role, PolicyName=name)["PolicyDocument"]
        )
        for name in chaos.read("iam", "list_role_policies", RoleName=role)["PolicyNames"]
    }
    if not policies:
        raise ChaosRefused(f"nothing to put again: role {role} has no inline policy")
    return {"role": role, "policies": policies}


def _apply_touch(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    _revert_s3(chaos, prior)  # each inline policy put again, as it was when it was saved


IAM_TOUCH = Fault(
    "iam-touch",
    "the role's inline policies put again unchanged (a recorded change that changes no permission)",
    _capture_touch,
    _apply_touch,
    _revert_s3,
)
IAM_NARROW = Fault(
    "iam-narrow",
    "S3 grants (or an action's) of the role's inline policies scoped to another resource",
    _capture_narrow,
    _apply_narrow,
    _put_back,
)
IAM_REVOKE_NAME = "iam-revoke"
IAM_REVOKE = Fault(
    IAM_REVOKE_NAME,
    "an action taken out of the role's inline Allow statements",
    _capture_revoke,
    _apply_revoke,
    _put_back,
)
IAM_DENY = Fault(
    "iam-deny",
    f"explicit Deny added to the role (inline policy {DENY_POLICY_NAME})",
    _capture_deny,
    _apply_deny,
    _revert_deny,
)
IAM_BOUNDARY = Fault(
    "iam-boundary",
    f"permissions boundary excluding an action attached to the role ({BOUNDARY_POLICY_PREFIX}<role>)",
    _capture_boundary,
    _apply_boundary,
    _revert_boundary,
)
