"""Who may decide on a plan on the console (``console.decision_page.DecisionGate``): only a person signed
in through the identity provider, named ``console:<subject>``, recently; and a form's token is good for
one session, one incident and one plan. The whole round trip (page, refusals, the decision, the executor
applying it) is tests/test_remediation_e2e.py's."""

from __future__ import annotations

from console.decision_page import DecisionGate
from console.sessions import Cookies, Identity

NOW = 1_800_000_000
COOKIES = Cookies(b"k" * 32, secure=False, clock=lambda: NOW)
ALICE = Identity("alice", "oauth", NOW + 3600, signed_in_at=NOW - 60)


def gate(
    approvers: frozenset[str] = frozenset({"console:alice"}), cookies: Cookies | None = COOKIES
) -> DecisionGate:
    return DecisionGate(approvers, 15 * 60, cookies, clock=lambda: NOW)


def test_only_a_named_person_signed_in_through_the_identity_provider_recently_may_decide() -> None:
    assert gate().refusal(ALICE) is None
    refusals = {
        "no console approver": gate(frozenset()).refusal(ALICE),
        "loopback": gate(cookies=None).refusal(ALICE),
        "not signed in": gate().refusal(None),
        "a key session": gate().refusal(Identity("key", "key", NOW + 3600, signed_in_at=NOW)),
        "someone else": gate().refusal(Identity("mallory", "oauth", NOW + 3600, signed_in_at=NOW)),
        "an old sign-in": gate().refusal(Identity("alice", "oauth", NOW + 3600, signed_in_at=NOW - 16 * 60)),
        "a cookie from before sign-in times": gate().refusal(Identity("alice", "oauth", NOW + 3600)),
    }
    assert refusals == {
        "no console approver": "No one approves from this console (REMEDIATION_APPROVERS names no "
        "console:<subject>).",
        "loopback": "Sign in through the identity provider to approve or reject here.",
        "not signed in": "Sign in through the identity provider to approve or reject here.",
        "a key session": "A key session names no person: sign in through the identity provider to decide.",
        "someone else": "console:mallory is not an approver (REMEDIATION_APPROVERS).",
        "an old sign-in": "Your sign-in is 16 min old; a decision needs one at most 15 min old: sign out and "
        "in again.",
        "a cookie from before sign-in times": f"Your sign-in is {NOW // 60} min old; a decision needs one at "
        "most 15 min old: sign out and in again.",
    }


def test_a_form_token_is_good_for_one_session_one_incident_and_one_plan() -> None:
    token = gate().token(ALICE, "fn@2026-12-02T00:00:00Z", "sha256:aa")
    others = {
        gate().token(ALICE, "fn@2026-12-02T00:00:01Z", "sha256:aa"),
        gate().token(ALICE, "fn@2026-12-02T00:00:00Z", "sha256:ab"),
        gate().token(
            Identity("alice", "oauth", NOW + 3600, signed_in_at=NOW), "fn@2026-12-02T00:00:00Z", "sha256:aa"
        ),
        gate().token(
            Identity("bob", "oauth", NOW + 3600, signed_in_at=NOW - 60),
            "fn@2026-12-02T00:00:00Z",
            "sha256:aa",
        ),
        gate(cookies=Cookies(b"x" * 32, secure=False)).token(ALICE, "fn@2026-12-02T00:00:00Z", "sha256:aa"),
    }
    assert token == gate().token(ALICE, "fn@2026-12-02T00:00:00Z", "sha256:aa")
    assert token not in others
    assert len(others) == 5
