"""The incident console in the MCP server stack, with ``ConsoleEnabled=true`` (every resource here exists
only then): the same image as its own Fargate service and identity, behind the same listener.

Its task role may GetItem and Query the two tables and the state table's indexes; with ConsoleApprovers (OAuth
only) it may also write a decision on a plan to incident-approvals and ask the executor's queue to look,
nothing else. Its execution role injects the MCP key as MCP_API_KEY and CONSOLE_SESSION_SECRET, which signs
the session cookie: a generated Secrets Manager secret (that secret only), so sessions outlive a task and
every task accepts them. Listener rules send its paths to it (/auth/* included: a browser signs in there, with
the key or, with OAuthIssuer, at the identity provider, which sends it back to /auth/callback).
CONSOLE_PUBLIC_URL is the listener's https name."""

from __future__ import annotations

from typing import Any

from console.permissions import DECISION_ACTIONS, QUEUE_ACTIONS
from deploy import fargate, policies
from deploy.cfn import ref, sub
from deploy.fargate import ECS_TASKS
from deploy.mcp_parameters import HAS_CONSOLE, HAS_CONSOLE_DECISIONS, HAS_OAUTH
from supervisor.incident.store import INDEXES

CONSOLE_CONTAINER = "incident-console"
CONSOLE_PORT = 8088
# What the listener sends to the console; everything else (/sse, /mcp, /healthz, ...) stays the MCP server's.
CONSOLE_PATHS = ("/incidents", "/incidents/*", "/drill", "/static/*", "/auth/*")
# An ALB rule condition takes at most three path patterns: one listener rule per three.
PATHS_PER_RULE = 3
SESSION_SECRET = "ConsoleSessionSecret"  # noqa: S105 - a logical id, not a secret
SESSION_SECRET_LENGTH = 64  # letters and digits; console.settings wants at least 32 characters
Template = dict[str, Any]


def _rule_name(index: int) -> str:
    return "ConsoleListenerRule" if index == 0 else f"ConsoleListenerRule{index + 1}"


def _listener_rules() -> Template:
    """Forward CONSOLE_PATHS to the console, PATHS_PER_RULE to a rule, before the listener's default."""
    return {
        _rule_name(n): {
            "Type": "AWS::ElasticLoadBalancingV2::ListenerRule",
            "Properties": {
                "ListenerArn": ref("HttpsListener"),
                "Priority": 10 + n,
                "Conditions": [
                    {
                        "Field": "path-pattern",
                        "PathPatternConfig": {"Values": list(CONSOLE_PATHS[start : start + PATHS_PER_RULE])},
                    }
                ],
                "Actions": [{"Type": "forward", "TargetGroupArn": ref("ConsoleTargetGroup")}],
            },
        }
        for n, start in enumerate(range(0, len(CONSOLE_PATHS), PATHS_PER_RULE))
    }


def _ingress() -> Template:
    """The console's port on the tasks' security group, from the load balancer."""
    return {
        "Type": "AWS::EC2::SecurityGroupIngress",
        "Properties": {
            "GroupId": ref("ServiceSecurityGroup"),
            "IpProtocol": "tcp",
            "FromPort": CONSOLE_PORT,
            "ToPort": CONSOLE_PORT,
            "SourceSecurityGroupId": ref("LoadBalancerSecurityGroup"),
            "Description": "incident console from the load balancer",
        },
    }


def _session_secret() -> Template:
    return {
        "Type": "AWS::SecretsManager::Secret",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "Description": "Signs the incident console's session cookies (CONSOLE_SESSION_SECRET), "
            "the same key in every console task",
            "GenerateSecretString": {
                "PasswordLength": SESSION_SECRET_LENGTH,
                "ExcludePunctuation": True,
            },
        },
    }


def _execution_role() -> Template:
    """Starts the console's tasks, injecting the MCP key and the session secret (those, no others)."""
    inject_key = {
        "Sid": "InjectMcpKey",
        "Effect": "Allow",
        "Action": ["ssm:GetParameters"],
        "Resource": [policies.parameter_arn("McpKeyParameterName")],
    }
    return policies.role(
        [
            *fargate.execution_statements(),
            inject_key,
            policies.injected_secret("InjectSessionSecret", SESSION_SECRET),
        ],
        ECS_TASKS,
        "Pulls the image, ships the console's logs and injects the MCP key and the session secret",
    )


def _environment() -> list[Template]:
    return [
        {"Name": "CONSOLE_HOST", "Value": "0.0.0.0"},  # noqa: S104 - keys required off loopback
        {"Name": "CONSOLE_PORT", "Value": str(CONSOLE_PORT)},
        {"Name": "CONSOLE_STATE_TABLE", "Value": ref("StateTableName")},
        {"Name": "CONSOLE_CONTEXT_TABLE", "Value": ref("ContextTableName")},
        {"Name": "CONSOLE_PUBLIC_URL", "Value": fargate.public_url()},
        {"Name": "CONSOLE_TRUSTED_PROXIES", "Value": fargate.LOAD_BALANCER_SOURCES},
        {"Name": "AWS_REGION", "Value": ref("AWS::Region")},
        {"Name": "AWS_DEFAULT_REGION", "Value": ref("AWS::Region")},
        *fargate.oauth_environment(),
        fargate.when(HAS_OAUTH, "CONSOLE_OAUTH_CLIENT_ID", ref("ConsoleOAuthClientId")),
        fargate.when(HAS_CONSOLE_DECISIONS, "REMEDIATION_APPROVERS", ref("ConsoleApprovers")),
        fargate.when(HAS_CONSOLE_DECISIONS, "INCIDENT_APPROVALS_TABLE", ref("ApprovalsTableName")),
        fargate.when(
            HAS_CONSOLE_DECISIONS,
            "REMEDIATION_QUEUE_URL",
            sub("https://sqs.${AWS::Region}.${AWS::URLSuffix}/${AWS::AccountId}/${RemediationQueueName}"),
        ),
    ]


def _decision_policy() -> Template:
    """The console's one write, with ConsoleApprovers: a decision on a plan in incident-approvals (read
    back when refused) and a request on the executor's queue."""
    statements = [
        policies.allow(
            "DecideOnPlans", DECISION_ACTIONS, [policies.dynamodb_table_arn("ApprovalsTableName")]
        ),
        policies.allow(
            "AskTheExecutor",
            QUEUE_ACTIONS,
            [sub("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${RemediationQueueName}")],
        ),
    ]
    return {
        "Type": "AWS::IAM::Policy",
        "Condition": HAS_CONSOLE_DECISIONS,
        "Properties": {
            "PolicyName": "console-decisions",
            "Roles": [ref("ConsoleTaskRole")],
            "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
        },
    }


def _health_check() -> Template:
    """Replaces the image's HEALTHCHECK, which probes the MCP server's port."""
    return {
        "Command": [
            "CMD",
            "python",
            "-c",
            "import sys, urllib.request; sys.exit(urllib.request.urlopen("
            f"'http://127.0.0.1:{CONSOLE_PORT}/healthz', timeout=2).status != 200)",
        ],
        "Interval": 15,
        "Timeout": 3,
        "Retries": 3,
        "StartPeriod": 10,
    }


def _container() -> Template:
    return {
        "Name": CONSOLE_CONTAINER,
        "Image": ref("ImageUri"),
        "Essential": True,
        "EntryPoint": ["python", "-m", "console.cli"],
        "Command": [],
        "PortMappings": [{"ContainerPort": CONSOLE_PORT, "Protocol": "tcp"}],
        "Environment": _environment(),
        "Secrets": [
            {"Name": "MCP_API_KEY", "ValueFrom": policies.parameter_arn("McpKeyParameterName")},
            {"Name": "CONSOLE_SESSION_SECRET", "ValueFrom": ref(SESSION_SECRET)},
        ],
        "HealthCheck": _health_check(),
        "LogConfiguration": fargate.log_configuration(CONSOLE_CONTAINER),
    }


def resources() -> Template:
    """The console's resources, each on the HasConsole condition."""
    rules = _listener_rules()
    console: Template = {
        "ConsoleIngress": _ingress(),
        "ConsoleTargetGroup": fargate.target_group(CONSOLE_PORT),
        **rules,
        SESSION_SECRET: _session_secret(),
        "ConsoleExecutionRole": _execution_role(),
        "ConsoleTaskRole": policies.role(
            policies.console_statements(INDEXES),
            ECS_TASKS,
            "The incident console's AWS identity: reads the incident tables",
        ),
        "ConsoleTaskDefinition": fargate.task_definition(
            CONSOLE_CONTAINER, "256", "512", "ConsoleExecutionRole", "ConsoleTaskRole", _container()
        ),
        "ConsoleService": fargate.service(
            CONSOLE_CONTAINER,
            1,
            "ConsoleTaskDefinition",
            CONSOLE_CONTAINER,
            CONSOLE_PORT,
            "ConsoleTargetGroup",
        )
        | {"DependsOn": sorted(rules)},
    }
    conditioned = {name: {"Condition": HAS_CONSOLE, **resource} for name, resource in console.items()}
    return conditioned | {"ConsoleDecisionPolicy": _decision_policy()}
