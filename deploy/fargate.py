"""What the MCP server and the console have in common as Fargate services of the MCP server stack: a target
group of the HTTPS listener, a task definition of the image logging to the stack's log group, the service in
the private subnets, the execution role's grants, and the environment both read (the public URL, OAuth)."""

from __future__ import annotations

from typing import Any

from deploy import policies
from deploy.cfn import get_att, ref, sub
from deploy.mcp_parameters import HAS_HOST_NAME, HAS_OAUTH, HAS_OAUTH_SCOPES

LOG_GROUP = "/ecs/incident-mcp-server"  # both services', each container's streams under its own prefix
ECS_TASKS = "ecs-tasks.amazonaws.com"
# Both services take connections only from the load balancer's security group, so every connection comes
# through it, from an address in the VPC: its X-Forwarded-For names the client (sign-in throttling counts
# per client). The VPC's own block is not known to the template; these are the private ranges it is in.
LOAD_BALANCER_SOURCES = "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"
Template = dict[str, Any]


def public_url(path: str = "") -> Template:
    """https://<PublicHostName, else the load balancer's name><path>: the name the certificate is for."""
    host = {"Fn::If": [HAS_HOST_NAME, ref("PublicHostName"), get_att("LoadBalancer", "DNSName")]}
    return {"Fn::Sub": [f"https://${{Host}}{path}", {"Host": host}]}


def when(condition: str, name: str, value: Any) -> Template:
    """An environment variable that exists only when ``condition`` holds."""
    return {"Fn::If": [condition, {"Name": name, "Value": value}, ref("AWS::NoValue")]}


def oauth_environment() -> list[Template]:
    """The OAuth settings both services read under the MCP server's names; none without OAuthIssuer."""
    return [
        when(HAS_OAUTH, "MCP_OAUTH_ISSUER", ref("OAuthIssuer")),
        when(HAS_OAUTH, "MCP_OAUTH_AUDIENCE", ref("OAuthAudience")),
        when(HAS_OAUTH_SCOPES, "MCP_OAUTH_SCOPES", ref("OAuthScopes")),
    ]


def execution_statements() -> list[dict[str, Any]]:
    """What ECS needs to start a task of the image: pull it from ECR, and write the container's logs."""
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
            "Resource": [policies.log_streams_arn(LOG_GROUP)],
        },
    ]


def target_group(port: int, attributes: list[dict[str, str]] | None = None) -> Template:
    """The tasks' IP addresses on ``port``, healthy while /healthz answers, given 30 s to finish their
    requests when they leave; ``attributes`` come before that one."""
    return {
        "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
        "Properties": {
            "VpcId": ref("VpcId"),
            "Protocol": "HTTP",
            "Port": port,
            "TargetType": "ip",
            "HealthCheckPath": "/healthz",
            "HealthCheckIntervalSeconds": 15,
            "TargetGroupAttributes": [
                *(attributes or []),
                {"Key": "deregistration_delay.timeout_seconds", "Value": "30"},
            ],
        },
    }


def log_configuration(container: str) -> Template:
    return {
        "LogDriver": "awslogs",
        "Options": {
            "awslogs-group": ref("LogGroup"),
            "awslogs-region": ref("AWS::Region"),
            "awslogs-stream-prefix": container,
        },
    }


def task_definition(
    family: str, cpu: str, memory: str, execution_role: str, task_role: str, container: Template
) -> Template:
    """A Fargate task of one container; the roles are logical ids of the template."""
    return {
        "Type": "AWS::ECS::TaskDefinition",
        "Properties": {
            "Family": family,
            "RequiresCompatibilities": ["FARGATE"],
            "NetworkMode": "awsvpc",
            "Cpu": cpu,
            "Memory": memory,
            "ExecutionRoleArn": get_att(execution_role),
            "TaskRoleArn": get_att(task_role),
            "RuntimePlatform": {"CpuArchitecture": "X86_64", "OperatingSystemFamily": "LINUX"},
            "ContainerDefinitions": [container],
        },
    }


def service(name: str, desired: Any, task: str, container: str, port: int, targets: str) -> Template:
    """A Fargate service in the private subnets running ``task``, registered with ``targets`` (logical
    ids of its task definition and of its target group of the listener)."""
    return {
        "Type": "AWS::ECS::Service",
        "Properties": {
            "ServiceName": name,
            "Cluster": ref("Cluster"),
            "LaunchType": "FARGATE",
            "DesiredCount": desired,
            "TaskDefinition": ref(task),
            "HealthCheckGracePeriodSeconds": 30,
            "NetworkConfiguration": {
                "AwsvpcConfiguration": {
                    "AssignPublicIp": "DISABLED",
                    "Subnets": ref("ServiceSubnetIds"),
                    "SecurityGroups": [ref("ServiceSecurityGroup")],
                }
            },
            "LoadBalancers": [
                {"ContainerName": container, "ContainerPort": port, "TargetGroupArn": ref(targets)}
            ],
        },
    }
