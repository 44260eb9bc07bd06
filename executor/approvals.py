"""The approval gate: a person's decision on one plan, kept in its own table (incident-approvals) that only
approvers and the executor may write, never the supervisor that made the plan.

An approval binds the plan's digest (the table's sort key: every call, parameter, precondition and
inverse) and the approver's identity; there is one decision per digest. It is good until the plan's
deadline (``approval_expires_at`` on the incident, 1 h after the plan by default), can be revoked until it
is used, and is used once: the executor redeems it with a conditional write before its first call, so a
replayed approval finds it redeemed and applies nothing.

    approved_by, approved_at   the decision (``decision``: APPROVED or REJECTED)
    expires_at                 the plan's deadline, copied from the incident when decided
    revoked_by, revoked_at     withdrawn before use
    redeemed_at, redeemed_by   used by the executor (its request id)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from botocore.exceptions import ClientError

from supervisor.incident.lifecycle import APPROVAL_DEADLINE, PLAN_DIGEST
from supervisor.incident.signals import stamp
from supervisor.incident.store import Clock, Item, from_item, to_item, utc_now

Decision = Literal["APPROVED", "REJECTED"]
PRINCIPAL_ARN: Final = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:(user|role)/[\w+=,.@/-]+")
# A person signed in to the console through its identity provider, named by the token's subject.
CONSOLE: Final = "console:"
_SUBJECT: Final = re.compile(r"[\w+=.@|:/-]{1,255}")


def approver_names(value: str) -> frozenset[str]:
    """The approvers a REMEDIATION_APPROVERS value names (comma-separated IAM user and role ARNs, and
    ``console:<subject>``); ValueError naming each entry that is neither."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    wrong = [
        name
        for name in names
        if not PRINCIPAL_ARN.fullmatch(name)
        and not (name.startswith(CONSOLE) and _SUBJECT.fullmatch(name.removeprefix(CONSOLE)))
    ]
    if wrong:
        raise ValueError(
            "REMEDIATION_APPROVERS names IAM users or roles by ARN (arn:aws:iam::123456789012:role/on-call) "
            f"and console sign-ins by subject (console:<the token's sub>), not {', '.join(map(repr, wrong))}"
        )
    return frozenset(names)


def approvals_table_schema() -> dict[str, Any]:
    """incident-approvals' keys, as ``CreateTable`` (and CloudFormation) take them."""
    return {
        "AttributeDefinitions": [
            {"AttributeName": "incident_id", "AttributeType": "S"},
            {"AttributeName": "digest", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "incident_id", "KeyType": "HASH"},
            {"AttributeName": "digest", "KeyType": "RANGE"},
        ],
    }


class ApprovalRefused(Exception):
    """A decision, revocation or redemption that may not happen, and why."""


@dataclass(frozen=True)
class Approver:
    """Who may approve: IAM principals by ARN (a role's sessions count as the role), and people signed in
    to the console by ``console:<subject>``."""

    arns: frozenset[str]

    def identity(self, caller_arn: str) -> str | None:
        """The approver ``caller_arn`` acts as (the role of an assumed-role session), or None."""
        arn = caller_arn
        if ":assumed-role/" in caller_arn:  # arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
            head, _, path = caller_arn.partition(":assumed-role/")
            arn = head.replace(":sts:", ":iam:") + ":role/" + path.split("/")[0]
        return arn if arn in self.arns else None


def _conflict(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


class Approvals:
    def __init__(self, dynamodb: Any, table: str, clock: Clock = utc_now) -> None:
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def get(self, incident_id: str, digest: str) -> Item | None:
        response = self.dynamodb.get_item(
            TableName=self.table, Key=self._key(incident_id, digest), ConsistentRead=True
        )
        return from_item(response["Item"]) if "Item" in response else None

    def decide(self, incident: Item, digest: str, approver: str, decision: Decision) -> Item:
        """Record ``approver``'s ``decision`` on the plan of ``incident`` (its incident-state item, read just
        before) whose digest they were shown. Refused when the incident awaits no approval, its plan is
        not the one shown, its deadline passed, or a decision on that plan exists."""
        incident_id, now = str(incident["incident_id"]), self.clock()
        if incident.get("status") != "AWAITING_APPROVAL":
            status = incident.get("status")
            raise ApprovalRefused(f"incident {incident_id} awaits no approval: it is {status}")
        if incident.get(PLAN_DIGEST) != digest:
            raise ApprovalRefused(
                f"the plan shown ({digest}) is not the plan awaiting approval ({incident.get(PLAN_DIGEST)}): "
                "show it again and decide on what it says now"
            )
        deadline = str(incident.get(APPROVAL_DEADLINE, ""))
        if deadline <= stamp(now):
            raise ApprovalRefused(f"the plan's approval expired at {deadline}")
        values: dict[str, object] = {
            "incident_id": incident_id,
            "digest": digest,
            "decision": decision,
            "approved_by" if decision == "APPROVED" else "rejected_by": approver,
            "decided_at": stamp(now),
            "expires_at": deadline,
        }
        try:
            self.dynamodb.put_item(
                TableName=self.table, Item=to_item(values), ConditionExpression="attribute_not_exists(digest)"
            )
        except ClientError as error:
            if _conflict(error):
                raise ApprovalRefused(self._why_not(incident_id, digest, "decide on")) from None
            raise
        return values

    def revoke(self, incident_id: str, digest: str, approver: str) -> Item:
        """Withdraw an approval not yet used."""
        return self._mark(incident_id, digest, {"revoked_by": approver, "revoked_at": stamp(self.clock())})

    def redeem(self, incident_id: str, digest: str, redeemer: str) -> Item:
        """Use the approval of ``digest`` once, before the first call: refused when there is none, it was
        rejected, revoked, used or has expired."""
        return self._mark(incident_id, digest, {"redeemed_by": redeemer, "redeemed_at": stamp(self.clock())})

    def _mark(self, incident_id: str, digest: str, values: dict[str, object]) -> Item:
        names = {f"#a{n}": name for n, name in enumerate(values)}
        sets = {f"#a{n}": f":a{n}" for n in range(len(values))}
        try:
            response = self.dynamodb.update_item(
                TableName=self.table,
                Key=self._key(incident_id, digest),
                UpdateExpression="SET " + ", ".join(f"{k} = {v}" for k, v in sets.items()),
                ConditionExpression="decision = :approved AND expires_at > :now AND "
                "attribute_not_exists(revoked_at) AND attribute_not_exists(redeemed_at)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(
                    {":approved": "APPROVED", ":now": stamp(self.clock())}
                    | {f":a{n}": value for n, value in enumerate(values.values())}
                ),
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _conflict(error):
                action = "revoke" if "revoked_at" in values else "use"
                raise ApprovalRefused(self._why_not(incident_id, digest, action)) from None
            raise
        return from_item(response["Attributes"])

    def _why_not(self, incident_id: str, digest: str, action: str) -> str:
        item = self.get(incident_id, digest)
        what = f"cannot {action} the approval of {incident_id}'s plan {digest}"
        if item is None:
            return f"{what}: no person approved it"
        if action == "decide on":
            who = item.get("approved_by") or item.get("rejected_by")
            return f"{what}: {who} already decided ({item.get('decision')}) at {item.get('decided_at')}"
        if item.get("decision") != "APPROVED":
            return f"{what}: it was rejected by {item.get('rejected_by')}"
        if "redeemed_at" in item:
            return f"{what}: it was used at {item['redeemed_at']}; an approval is good for one run"
        if "revoked_at" in item:
            return f"{what}: {item.get('revoked_by')} revoked it at {item['revoked_at']}"
        return f"{what}: it expired at {item.get('expires_at')}"

    @staticmethod
    def _key(incident_id: str, digest: str) -> dict[str, Any]:
        return {"incident_id": {"S": incident_id}, "digest": {"S": digest}}
