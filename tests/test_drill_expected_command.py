"""The remediation command a scenario expects: refused when declared with an option or a value its operation
does not take, resolved from what the injector saved, and compared as AWS reads each parameter."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from chaos.drill.apply_command import AwsCommand, parse_command
from chaos.drill.expected_command import Command, Known, differences, named, resolve, saved
from chaos.drill.recurrence import opened_by
from chaos.drill.scenarios import SCENARIOS, Applies, ExpectedIncident
from chaos.faults.network import BLOCK_EGRESS
from chaos.sandbox import names

KNOWN = Known(account=names.ACCOUNT_ID, region=names.DEFAULT_REGION)


@pytest.mark.parametrize(
    ("operation", "params", "refusal"),
    [
        ("lambda roll-back", {}, "lambda has no operation 'roll-back'"),
        ("lambada update-alias", {}, "no service 'lambada'"),
        ("update-alias", {}, "'service operation'"),
        ("lambda update-alias", {"--version": "1"}, "aws lambda update-alias takes no option --version"),
        ("lambda delete-function-concurrency", {"--qualifier": "live"}, "takes no option --qualifier"),
        (
            "lambda update-function-configuration",
            {"--timeout": "3"},
            "--timeout: is of type integer, not '3'",
        ),
        ("lambda update-function-configuration", {"--timeout": True}, "is of type integer, not True"),
        ("lambda update-event-source-mapping", {"--enabled": "true"}, "is of type boolean, not 'true'"),
        (
            "lambda update-function-configuration",
            {"--dead-letter-config": {"TargetARN": "arn:aws:sqs:ca-central-1:123456789012:q"}},
            "--dead-letter-config: has no member 'TargetARN'",
        ),
        (
            "lambda create-event-source-mapping",
            {"--function-response-types": "ReportBatchItemFailures"},
            "is a list, not 'ReportBatchItemFailures'",
        ),
    ],
)
def test_a_command_the_operation_does_not_take_is_refused_when_declared(
    operation: str, params: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(refusal)):
        Command(operation, params)


def test_a_scenario_declaring_a_parameter_its_operation_does_not_take_is_refused() -> None:
    with pytest.raises(ValueError, match="takes no option --function-version"):
        ExpectedIncident(
            names.ORDERS_FUNCTION,
            frozenset({"code_error"}),
            command=Command("lambda delete-function-concurrency", {"--function-version": "1"}),
        )
    with pytest.raises(ValueError, match="only where one is expected"):
        ExpectedIncident(names.ORDERS_FUNCTION, frozenset({"code_error"}), applies=Applies())


def test_values_known_at_run_time_are_checked_then() -> None:
    sg = named("security-group")
    command = Command(
        "ec2 authorize-security-group-egress",
        {"--group-id": sg, "--ip-permissions": saved(BLOCK_EGRESS, "groups", sg)},
    )
    rules = [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443}]
    known = Known({"network": {"groups": {"sg-1": rules}}}, {"security-group": "sg-1"})
    assert resolve(command.params["--ip-permissions"], known) == rules
    assert resolve(command.params["--group-id"], known) == "sg-1"
    with pytest.raises(LookupError, match=r"network saved nothing at groups\.sg-2"):
        resolve(command.params["--ip-permissions"], Known(known.saved, {"security-group": "sg-2"}))
    with pytest.raises(LookupError, match="the stage has no security-group"):
        resolve(sg, Known())


EGRESS = Command(
    "ec2 authorize-security-group-egress",
    {
        "--group-id": "sg-1",
        "--ip-permissions": [
            {
                "IpProtocol": "tcp",
                "FromPort": 443,
                "ToPort": 443,
                "IpRanges": [{"CidrIp": "0.0.0.0/0", "Description": "HTTPS"}],
                "Ipv6Ranges": [],  # as EC2 describes a rule
                "PrefixListIds": [],
                "UserIdGroupPairs": [],
            }
        ],
    },
)


def _egress(*rules: dict[str, Any]) -> AwsCommand:
    return parse_command(
        f"aws ec2 authorize-security-group-egress --group-id sg-1 --ip-permissions '{json.dumps(rules)}'",
        {"ec2 authorize-security-group-egress"},
    )


def test_security_group_rules_compare_as_ec2_reads_them() -> None:
    ranges = [{"Description": "HTTPS", "CidrIp": "0.0.0.0/0"}]
    same = {"IpRanges": ranges, "ToPort": 443, "FromPort": 443, "IpProtocol": "6"}  # tcp by its number
    assert differences(_egress(same), EGRESS, KNOWN) == []
    other_port = {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80, "IpRanges": ranges}
    (problem,) = differences(_egress(other_port), EGRESS, KNOWN)
    assert problem.startswith('--ip-permissions [{"IpProtocol":"tcp","FromPort":80,')
    assert '], expected [{"IpProtocol":"tcp","FromPort":443,' in problem


@pytest.mark.parametrize(
    ("given", "same"),
    [
        ("orders-api", True),
        (f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:orders-api", True),
        (f"{names.ACCOUNT_ID}:function:orders-api", True),
        ("orders-api:live", False),  # the alias, not the function
        (f"arn:aws:lambda:us-east-1:{names.ACCOUNT_ID}:function:orders-api", False),
        (f"{names.SECOND_ACCOUNT_ID}:function:orders-api", False),
        ("orders-api-copy", False),
    ],
)
def test_a_function_name_compares_as_the_function_it_names(given: str, same: bool) -> None:
    expected = Command("lambda delete-function-concurrency", {"--function-name": names.ORDERS_FUNCTION})
    command = AwsCommand("lambda", "DeleteFunctionConcurrency", {"FunctionName": given})
    assert (differences(command, expected, KNOWN) == []) is same


def test_a_value_compares_with_its_type() -> None:
    """An integer is not the string of its digits, a switch is not 1."""
    expected = Command("lambda update-event-source-mapping", {"--enabled": True, "--batch-size": 5})
    right = AwsCommand("lambda", "UpdateEventSourceMapping", {"Enabled": True, "BatchSize": 5})
    assert differences(right, expected, KNOWN) == []
    wrong = AwsCommand("lambda", "UpdateEventSourceMapping", {"Enabled": 1, "BatchSize": "5"})
    assert differences(wrong, expected, KNOWN) == [
        "--enabled 1, expected true",
        '--batch-size "5", expected 5',
    ]


# Scenarios that expect a command the stage does not apply, and why (docs/drill.md says the same).
# (fixed-then-second's first plan is approved after the operator removed the concurrency: the executor
# must refuse it, Applies(twist="moved").)
NOT_APPLIED = {
    # cancelling the key's deletion leaves it disabled: the function recovers only after the second step
    "key-pending-deletion",
}


def test_every_scenario_that_expects_a_command_states_its_parameters_and_applies_it() -> None:
    for scenario in SCENARIOS:
        commands = [expected for expected in scenario.expected if expected.command]
        if not commands:
            continue
        for expected in commands:
            assert expected.command is not None
            assert expected.command.params, f"{scenario.name}: {expected.command.operation} states nothing"
        # Fixed before the next act (Act.fixed_first), or applied when judged.
        fixed = {
            i for n, act in enumerate(scenario.acts) if act.fixed_first for i in opened_by(scenario, n - 1)
        }
        applied = [e for i, e in enumerate(scenario.expected) if e.command and (e.applies or i in fixed)]
        # Every incident with the command expects it (one failure's others find the first one's in place).
        assert applied == ([] if scenario.name in NOT_APPLIED else commands), scenario.name
