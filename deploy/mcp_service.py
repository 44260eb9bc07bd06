"""The MCP server stack: the container on ECS Fargate behind an HTTPS Application Load Balancer with
sticky sessions (an SSE session lives in one process), its read-only task role, and its logs; and, with
``ConsoleEnabled=true``, the incident console from the same image, as its own service and identity,
behind the same listener. Written to ``deploy/mcp-server.template.json`` by ``python -m deploy.build``."""

from __future__ import annotations

from typing import Any

from chaos.sandbox import names
from deploy import policies
from deploy.cfn import get_att, ref, sub
from supervisor.incident.store import INDEXES

CONTAINER = "mcp-server"
PORT = 8080
LOG_GROUP = "/ecs/incident-mcp-server"
CONSOLE_CONTAINER = "incident-console"
CONSOLE_PORT = 8088
# What the listener sends to the console; everything else (/sse, /mcp, /healthz, ...) stays the MCP server's.
CONSOLE_PATHS = ("/incidents", "/incidents/*", "/drill", "/static/*", "/auth/*")
# An ALB rule condition takes at most three path patterns: one listener rule per three.
PATHS_PER_RULE = 3
HAS_CONSOLE = "HasConsole"
HAS_OAUTH = "HasOAuth"
HAS_OAUTH_SCOPES = "HasOAuthScopes"
SESSION_SECRET = "ConsoleSessionSecret"  # noqa: S105 - a logical id, not a secret
SESSION_SECRET_LENGTH = 64  # letters and digits; console.settings wants at least 32 characters
# OAuth 2.1 resource-server mode (mcp_server/settings.py) for both services, when OAuthIssuer is set.
OAUTH_PARAMETERS = ("OAuthIssuer", "OAuthAudience", "OAuthScopes", "ConsoleOAuthClientId")
ECS_TASKS = "ecs-tasks.amazonaws.com"
Template = dict[str, Any]


def _parameters() -> Template:
    return {
        "VpcId": {"Type": "AWS::EC2::VPC::Id"},
        "LoadBalancerSubnetIds": {
            "Type": "List<AWS::EC2::Subnet::Id>",
            "Description": "Public subnets (two or more zones) for the load balancer.",
        },
        "ServiceSubnetIds": {
            "Type": "List<AWS::EC2::Subnet::Id>",
            "Description": "Private subnets for the tasks, with a route to the AWS APIs (NAT or endpoints).",
        },
        "ImageUri": {"Type": "String", "Description": "The MCP server image (deploy/Dockerfile) in ECR."},
        "CertificateArn": {"Type": "String", "Description": "ACM certificate for the HTTPS listener."},
        "AllowedCidr": {
            "Type": "String",
            "Default": "0.0.0.0/0",
            "AllowedPattern": r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$",
            "Description": "Who may reach the listener (the bearer key is still required).",
        },
        "McpKeyParameterName": {
            "Type": "String",
            "Default": names.MCP_KEY_PARAMETER,
            "AllowedPattern": "^/.+",
        },
        "PublicHostName": {
            "Type": "String",
            "Default": "",
            "Description": "Your DNS name for the load balancer, if any; accepted as Host besides its own.",
        },
        "DesiredCount": {"Type": "Number", "Default": 1, "MinValue": 1},
        "McpAccounts": {
            "Type": "String",
            "Default": "{}",
            "Description": 'Other accounts the tools may read (MCP_ACCOUNTS): {"alias": {"role_arn": '
            '"arn:aws:iam::<account>:role/<read-only role>", "external_id": "..."}}.',
        },
        "CrossAccountRoleArns": {
            "Type": "CommaDelimitedList",
            "Default": "",
            "Description": "The role ARNs of McpAccounts: the task may assume these, and no other role.",
        },
        "ConsoleEnabled": {
            "Type": "String",
            "Default": "false",
            "AllowedValues": ["false", "true"],
            "Description": "Also run the read-only incident console (same image) behind the listener, "
            "at /incidents; browsers sign in with the MCP server's key at /auth/login, or with OAuthIssuer "
            "at the identity provider.",
        },
        "OAuthIssuer": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": r"^$|^https://\S+$",
            "Description": "OAuth 2.1 for the MCP server and the console (MCP_OAUTH_ISSUER): the identity "
            "provider's issuer URL, exactly as in the tokens' iss. Empty: keys only.",
        },
        "OAuthAudience": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": r"^\S*$",
            "Description": "The audience access tokens must name (MCP_OAUTH_AUDIENCE; Cognito: the app "
            "client id). Required with OAuthIssuer.",
        },
        "OAuthScopes": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": r"^[\x21\x23-\x5b\x5d-\x7e ,]*$",
            "Description": "Scopes every access token must carry, comma- or space-separated "
            "(MCP_OAUTH_SCOPES); the console asks for them at sign-in.",
        },
        "ConsoleOAuthClientId": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": r"^\S*$",
            "Description": "The console's client id at the issuer (CONSOLE_OAUTH_CLIENT_ID), with "
            "https://<PublicHostName>/auth/callback as its redirect URI. Required with OAuthIssuer and "
            "ConsoleEnabled=true.",
        },
        "StateTableName": {
            "Type": "String",
            "Default": names.STATE_TABLE,
            "Description": "The incident-state table the console reads (the StateTableName output of the "
            "incident-response stack).",
        },
        "ContextTableName": {
            "Type": "String",
            "Default": names.CONTEXT_TABLE,
            "Description": "The incident-context table the console reads.",
        },
    }


def _public_url(path: str = "") -> Template:
    """https://<PublicHostName, else the load balancer's name><path>: the name the certificate is for."""
    host = {"Fn::If": ["HasHostName", ref("PublicHostName"), get_att("LoadBalancer", "DNSName")]}
    return {"Fn::Sub": [f"https://${{Host}}{path}", {"Host": host}]}


def _when(condition: str, name: str, value: Any) -> Template:
    """An environment variable that exists only when ``condition`` holds."""
    return {"Fn::If": [condition, {"Name": name, "Value": value}, ref("AWS::NoValue")]}


def _oauth_environment() -> list[Template]:
    """The OAuth settings both services read under the MCP server's names; none without OAuthIssuer."""
    return [
        _when(HAS_OAUTH, "MCP_OAUTH_ISSUER", ref("OAuthIssuer")),
        _when(HAS_OAUTH, "MCP_OAUTH_AUDIENCE", ref("OAuthAudience")),
        _when(HAS_OAUTH_SCOPES, "MCP_OAUTH_SCOPES", ref("OAuthScopes")),
    ]


def _rules() -> Template:
    """Deploy-time checks of the OAuth parameters (the services would otherwise fail at start, or ignore
    them): an issuer needs an audience, and the console a client id; without an issuer, none is set."""
    issuer_set = {"Fn::Not": [{"Fn::Equals": [ref("OAuthIssuer"), ""]}]}

    def is_set(name: str) -> Template:
        return {"Fn::Not": [{"Fn::Equals": [ref(name), ""]}]}

    return {
        "OAuthAudienceWithIssuer": {
            "RuleCondition": issuer_set,
            "Assertions": [
                {
                    "Assert": is_set("OAuthAudience"),
                    "AssertDescription": "OAuthIssuer requires OAuthAudience (the tokens' aud).",
                }
            ],
        },
        "ConsoleOAuthClientWithIssuer": {
            "RuleCondition": {"Fn::And": [issuer_set, {"Fn::Equals": [ref("ConsoleEnabled"), "true"]}]},
            "Assertions": [
                {
                    "Assert": is_set("ConsoleOAuthClientId"),
                    "AssertDescription": "OAuthIssuer with ConsoleEnabled=true requires ConsoleOAuthClientId "
                    "(the console's client id at the issuer).",
                }
            ],
        },
        "OAuthSettingsNeedIssuer": {
            "RuleCondition": {"Fn::Equals": [ref("OAuthIssuer"), ""]},
            "Assertions": [
                {
                    "Assert": {"Fn::Equals": [ref(name), ""]},
                    "AssertDescription": f"{name} only applies with OAuthIssuer, which is empty.",
                }
                for name in OAUTH_PARAMETERS[1:]
            ],
        },
    }


def _security_groups() -> Template:
    return {
        "LoadBalancerSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {
                "GroupDescription": "MCP server load balancer: HTTPS in",
                "VpcId": ref("VpcId"),
                "SecurityGroupIngress": [
                    {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": ref("AllowedCidr")}
                ],
            },
        },
        "ServiceSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {
                "GroupDescription": "MCP server tasks: from the load balancer in, HTTPS to AWS APIs out",
                "VpcId": ref("VpcId"),
                "SecurityGroupIngress": [
                    {
                        "IpProtocol": "tcp",
                        "FromPort": PORT,
                        "ToPort": PORT,
                        "SourceSecurityGroupId": ref("LoadBalancerSecurityGroup"),
                    }
                ],
                "SecurityGroupEgress": [
                    {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}
                ],
            },
        },
    }


def _load_balancer() -> Template:
    return {
        "LoadBalancer": {
            "Type": "AWS::ElasticLoadBalancingV2::LoadBalancer",
            "Properties": {
                "Scheme": "internet-facing",
                "Subnets": ref("LoadBalancerSubnetIds"),
                "SecurityGroups": [ref("LoadBalancerSecurityGroup")],
                # SSE streams stay open between events; the server sends keep-alive pings well within this.
                "LoadBalancerAttributes": [{"Key": "idle_timeout.timeout_seconds", "Value": "300"}],
            },
        },
        "TargetGroup": {
            "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
            "Properties": {
                "VpcId": ref("VpcId"),
                "Protocol": "HTTP",
                "Port": PORT,
                "TargetType": "ip",
                "HealthCheckPath": "/healthz",
                "HealthCheckIntervalSeconds": 15,
                "TargetGroupAttributes": [
                    {"Key": "stickiness.enabled", "Value": "true"},
                    {"Key": "stickiness.type", "Value": "lb_cookie"},
                    {"Key": "stickiness.lb_cookie.duration_seconds", "Value": "86400"},
                    {"Key": "deregistration_delay.timeout_seconds", "Value": "30"},
                ],
            },
        },
        "HttpsListener": {
            "Type": "AWS::ElasticLoadBalancingV2::Listener",
            "Properties": {
                "LoadBalancerArn": ref("LoadBalancer"),
                "Protocol": "HTTPS",
                "Port": 443,
                "SslPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
                "Certificates": [{"CertificateArn": ref("CertificateArn")}],
                "DefaultActions": [{"Type": "forward", "TargetGroupArn": ref("TargetGroup")}],
            },
        },
    }


def _execution_statements() -> list[dict[str, Any]]:
    return [
        {"Sid": "PullImage", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": ["*"]},
        {
            "Sid": "PullImageLayers",
            "Effect": "Allow",
            "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": [sub("arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/*")],
        },
        {
            "Sid": "ShipLogs",
            "Effect": "Allow",
            "Action": sorted(policies.LOG_ACTIONS),
            "Resource": [policies.log_streamsget_att(LOG_GROUP)],
        },
    ]


def _service(
    name: str, desired: Any, task_definition: str, container: str, port: int, target_group: str
) -> Template:
    """A Fargate service in the private subnets, registered with its target group of the listener."""
    return {
        "Type": "AWS::ECS::Service",
        "Properties": {
            "ServiceName": name,
            "Cluster": ref("Cluster"),
            "LaunchType": "FARGATE",
            "DesiredCount": desired,
            "TaskDefinition": ref(task_definition),
            "HealthCheckGracePeriodSeconds": 30,
            "NetworkConfiguration": {
                "AwsvpcConfiguration": {
                    "AssignPublicIp": "DISABLED",
                    "Subnets": ref("ServiceSubnetIds"),
                    "SecurityGroups": [ref("ServiceSecurityGroup")],
                }
            },
            "LoadBalancers": [
                {"ContainerName": container, "ContainerPort": port, "TargetGroupArn": ref(target_group)}
            ],
        },
    }


def _task() -> Template:
    allowed_hosts = {
        "Fn::Join": [
            ",",
            [
                get_att("LoadBalancer", "DNSName"),
                {"Fn::If": ["HasHostName", ref("PublicHostName"), ""]},
            ],
        ]
    }
    return {
        "LogGroup": {
            "Type": "AWS::Logs::LogGroup",
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
            "Properties": {"LogGroupName": LOG_GROUP, "RetentionInDays": 30},
        },
        "ExecutionRole": policies.role(
            _execution_statements(), ECS_TASKS, "Pulls the MCP server image and ships its logs"
        ),
        "TaskRole": policies.role(
            policies.mcp_server_statements(),
            ECS_TASKS,
            "The MCP server's AWS identity: read-only diagnostics",
        ),
        "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {"ClusterName": "incident-response"}},
        "TaskDefinition": {
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {
                "Family": "incident-mcp-server",
                "RequiresCompatibilities": ["FARGATE"],
                "NetworkMode": "awsvpc",
                "Cpu": "512",
                "Memory": "1024",
                "ExecutionRoleArn": get_att("ExecutionRole"),
                "TaskRoleArn": get_att("TaskRole"),
                "RuntimePlatform": {"CpuArchitecture": "X86_64", "OperatingSystemFamily": "LINUX"},
                "ContainerDefinitions": [
                    {
                        "Name": CONTAINER,
                        "Image": ref("ImageUri"),
                        "Essential": True,
                        "PortMappings": [{"ContainerPort": PORT, "Protocol": "tcp"}],
                        "Environment": [
                            {"Name": "MCP_API_KEY_SSM_PARAMETER", "Value": ref("McpKeyParameterName")},
                            {"Name": "MCP_ALLOWED_HOSTS", "Value": allowed_hosts},
                            {"Name": "MCP_ACCOUNTS", "Value": ref("McpAccounts")},
                            {"Name": "AWS_REGION", "Value": ref("AWS::Region")},
                            {"Name": "AWS_DEFAULT_REGION", "Value": ref("AWS::Region")},
                            *_oauth_environment(),
                            _when(HAS_OAUTH, "MCP_OAUTH_RESOURCE", _public_url()),
                        ],
                        "LogConfiguration": {
                            "LogDriver": "awslogs",
                            "Options": {
                                "awslogs-group": ref("LogGroup"),
                                "awslogs-region": ref("AWS::Region"),
                                "awslogs-stream-prefix": CONTAINER,
                            },
                        },
                    }
                ],
            },
        },
        "Service": _service(
            "incident-mcp-server", ref("DesiredCount"), "TaskDefinition", CONTAINER, PORT, "TargetGroup"
        )
        | {"DependsOn": ["HttpsListener"]},
    }


def _console() -> Template:
    """The console's service: its own task role (GetItem and Query on the two tables and the status
    index, nothing else), the MCP key injected as MCP_API_KEY by its execution role, and listener rules
    for its paths (/auth/* included: a browser signs in there, with the key or, with OAuthIssuer, at the
    identity provider, which sends it back to /auth/callback). CONSOLE_PUBLIC_URL is the listener's https
    name. The session cookie is signed with CONSOLE_SESSION_SECRET, a generated Secrets Manager secret
    the execution role injects (that secret only), so sessions outlive a task and every task accepts
    them. Every resource exists only with ConsoleEnabled=true."""
    rules = {
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
    inject_key = {
        "Sid": "InjectMcpKey",
        "Effect": "Allow",
        "Action": ["ssm:GetParameters"],
        "Resource": [policies.parameterget_att("McpKeyParameterName")],
    }
    resources: Template = {
        "ConsoleIngress": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": ref("ServiceSecurityGroup"),
                "IpProtocol": "tcp",
                "FromPort": CONSOLE_PORT,
                "ToPort": CONSOLE_PORT,
                "SourceSecurityGroupId": ref("LoadBalancerSecurityGroup"),
                "Description": "incident console from the load balancer",
            },
        },
        "ConsoleTargetGroup": {
            "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
            "Properties": {
                "VpcId": ref("VpcId"),
                "Protocol": "HTTP",
                "Port": CONSOLE_PORT,
                "TargetType": "ip",
                "HealthCheckPath": "/healthz",
                "HealthCheckIntervalSeconds": 15,
                "TargetGroupAttributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "30"}],
            },
        },
        **rules,
        SESSION_SECRET: {
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
        },
        "ConsoleExecutionRole": policies.role(
            [
                *_execution_statements(),
                inject_key,
                policies.injected_secret("InjectSessionSecret", SESSION_SECRET),
            ],
            ECS_TASKS,
            "Pulls the image, ships the console's logs and injects the MCP key and the session secret",
        ),
        "ConsoleTaskRole": policies.role(
            policies.console_statements(INDEXES),
            ECS_TASKS,
            "The incident console's AWS identity: reads the incident tables",
        ),
        "ConsoleTaskDefinition": {
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {
                "Family": CONSOLE_CONTAINER,
                "RequiresCompatibilities": ["FARGATE"],
                "NetworkMode": "awsvpc",
                "Cpu": "256",
                "Memory": "512",
                "ExecutionRoleArn": get_att("ConsoleExecutionRole"),
                "TaskRoleArn": get_att("ConsoleTaskRole"),
                "RuntimePlatform": {"CpuArchitecture": "X86_64", "OperatingSystemFamily": "LINUX"},
                "ContainerDefinitions": [
                    {
                        "Name": CONSOLE_CONTAINER,
                        "Image": ref("ImageUri"),
                        "Essential": True,
                        "EntryPoint": ["python", "-m", "console.cli"],
                        "Command": [],
                        "PortMappings": [{"ContainerPort": CONSOLE_PORT, "Protocol": "tcp"}],
                        "Environment": [
                            {"Name": "CONSOLE_HOST", "Value": "0.0.0.0"},  # noqa: S104 - keys required off loopback
                            {"Name": "CONSOLE_PORT", "Value": str(CONSOLE_PORT)},
                            {"Name": "CONSOLE_STATE_TABLE", "Value": ref("StateTableName")},
                            {"Name": "CONSOLE_CONTEXT_TABLE", "Value": ref("ContextTableName")},
                            {"Name": "CONSOLE_PUBLIC_URL", "Value": _public_url()},
                            {"Name": "AWS_REGION", "Value": ref("AWS::Region")},
                            {"Name": "AWS_DEFAULT_REGION", "Value": ref("AWS::Region")},
                            *_oauth_environment(),
                            _when(HAS_OAUTH, "CONSOLE_OAUTH_CLIENT_ID", ref("ConsoleOAuthClientId")),
                        ],
                        "Secrets": [
                            {
                                "Name": "MCP_API_KEY",
                                "ValueFrom": policies.parameterget_att("McpKeyParameterName"),
                            },
                            {"Name": "CONSOLE_SESSION_SECRET", "ValueFrom": ref(SESSION_SECRET)},
                        ],
                        # Replaces the image's HEALTHCHECK, which probes the MCP server's port.
                        "HealthCheck": {
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
                        },
                        "LogConfiguration": {
                            "LogDriver": "awslogs",
                            "Options": {
                                "awslogs-group": ref("LogGroup"),
                                "awslogs-region": ref("AWS::Region"),
                                "awslogs-stream-prefix": CONSOLE_CONTAINER,
                            },
                        },
                    }
                ],
            },
        },
        "ConsoleService": _service(
            CONSOLE_CONTAINER,
            1,
            "ConsoleTaskDefinition",
            CONSOLE_CONTAINER,
            CONSOLE_PORT,
            "ConsoleTargetGroup",
        )
        | {"DependsOn": sorted(rules)},
    }
    return {name: {"Condition": HAS_CONSOLE, **resource} for name, resource in resources.items()}


def _rule_name(index: int) -> str:
    return "ConsoleListenerRule" if index == 0 else f"ConsoleListenerRule{index + 1}"


def build() -> Template:
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "incident-response MCP server on ECS Fargate, behind an HTTPS load balancer",
        "Parameters": _parameters(),
        "Conditions": {
            "HasHostName": {"Fn::Not": [{"Fn::Equals": [ref("PublicHostName"), ""]}]},
            "HasCrossAccountRoles": {
                "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", ref("CrossAccountRoleArns")]}, ""]}]
            },
            HAS_CONSOLE: {"Fn::Equals": [ref("ConsoleEnabled"), "true"]},
            HAS_OAUTH: {"Fn::Not": [{"Fn::Equals": [ref("OAuthIssuer"), ""]}]},
            HAS_OAUTH_SCOPES: {
                "Fn::And": [{"Condition": HAS_OAUTH}, {"Fn::Not": [{"Fn::Equals": [ref("OAuthScopes"), ""]}]}]
            },
        },
        "Rules": _rules(),
        "Resources": _security_groups() | _load_balancer() | _task() | _console(),
        "Outputs": {
            "McpServerUrl": {"Value": _public_url("/sse")},
            "McpStreamableHttpUrl": {"Value": _public_url("/mcp")},
            "TaskRoleArn": {"Value": get_att("TaskRole")},
            "ConsoleUrl": {
                "Condition": HAS_CONSOLE,
                "Value": _public_url("/incidents"),
            },
            "ConsoleTaskRoleArn": {"Condition": HAS_CONSOLE, "Value": get_att("ConsoleTaskRole")},
        },
    }
