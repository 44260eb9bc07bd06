"""The MCP server stack: the container on ECS Fargate behind an HTTPS Application Load Balancer with
sticky sessions (an SSE session lives in one process), its read-only task role, and its logs; and, with
``ConsoleEnabled=true``, the incident console from the same image (``deploy/console_service.py``). Its
parameters, conditions and rules: ``deploy/mcp_parameters.py``. Written to ``deploy/mcp-server.template.json``
by ``python -m deploy.build``."""

from __future__ import annotations

from typing import Any

from deploy import console_service, fargate, mcp_parameters, policies
from deploy.cfn import get_att, ref
from deploy.fargate import ECS_TASKS, LOG_GROUP
from deploy.mcp_parameters import HAS_CONSOLE, HAS_HOST_NAME, HAS_OAUTH

CONTAINER = "mcp-server"
PORT = 8080
Template = dict[str, Any]


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
                # SSE streams carry a ping every 15 s, well within this; the server keeps an idle
                # connection longer (MCP_KEEP_ALIVE_TIMEOUT, 75 s): the balancer never reuses one it closes.
                "LoadBalancerAttributes": [{"Key": "idle_timeout.timeout_seconds", "Value": "60"}],
            },
        },
        "TargetGroup": fargate.target_group(
            PORT,
            [
                {"Key": "stickiness.enabled", "Value": "true"},
                {"Key": "stickiness.type", "Value": "lb_cookie"},
                {"Key": "stickiness.lb_cookie.duration_seconds", "Value": "86400"},
            ],
        ),
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


def _environment() -> list[Template]:
    allowed_hosts = {
        "Fn::Join": [
            ",",
            [get_att("LoadBalancer", "DNSName"), {"Fn::If": [HAS_HOST_NAME, ref("PublicHostName"), ""]}],
        ]
    }
    return [
        {"Name": "MCP_API_KEY_SSM_PARAMETER", "Value": ref("McpKeyParameterName")},
        {"Name": "MCP_ALLOWED_HOSTS", "Value": allowed_hosts},
        {"Name": "MCP_TRUSTED_PROXIES", "Value": fargate.LOAD_BALANCER_SOURCES},
        {"Name": "MCP_ACCOUNTS", "Value": ref("McpAccounts")},
        {"Name": "MCP_INCIDENT_STATE_TABLE", "Value": ref("StateTableName")},
        {"Name": "AWS_REGION", "Value": ref("AWS::Region")},
        {"Name": "AWS_DEFAULT_REGION", "Value": ref("AWS::Region")},
        *fargate.oauth_environment(),
        fargate.when(HAS_OAUTH, "MCP_OAUTH_RESOURCE", fargate.public_url()),
    ]


def _container() -> Template:
    return {
        "Name": CONTAINER,
        "Image": ref("ImageUri"),
        "Essential": True,
        "PortMappings": [{"ContainerPort": PORT, "Protocol": "tcp"}],
        "Environment": _environment(),
        "LogConfiguration": fargate.log_configuration(CONTAINER),
    }


def _service() -> Template:
    """The stack's log group and cluster, which the console shares, and the MCP server's identities, task
    definition and service."""
    return {
        "LogGroup": {
            "Type": "AWS::Logs::LogGroup",
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
            "Properties": {"LogGroupName": LOG_GROUP, "RetentionInDays": 30},
        },
        "ExecutionRole": policies.role(
            fargate.execution_statements(), ECS_TASKS, "Pulls the MCP server image and ships its logs"
        ),
        "TaskRole": policies.role(
            policies.mcp_server_statements(),
            ECS_TASKS,
            "The MCP server's AWS identity: read-only diagnostics",
        ),
        "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {"ClusterName": "incident-response"}},
        "TaskDefinition": fargate.task_definition(
            "incident-mcp-server", "512", "1024", "ExecutionRole", "TaskRole", _container()
        ),
        "Service": fargate.service(
            "incident-mcp-server", ref("DesiredCount"), "TaskDefinition", CONTAINER, PORT, "TargetGroup"
        )
        | {"DependsOn": ["HttpsListener"]},
    }


def build() -> Template:
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "incident-response MCP server on ECS Fargate, behind an HTTPS load balancer",
        "Parameters": mcp_parameters.parameters(),
        "Conditions": mcp_parameters.conditions(),
        "Rules": mcp_parameters.rules(),
        "Resources": _security_groups() | _load_balancer() | _service() | console_service.resources(),
        "Outputs": {
            "McpServerUrl": {"Value": fargate.public_url("/sse")},
            "McpStreamableHttpUrl": {"Value": fargate.public_url("/mcp")},
            "TaskRoleArn": {"Value": get_att("TaskRole")},
            "ConsoleUrl": {
                "Condition": HAS_CONSOLE,
                "Value": fargate.public_url("/incidents"),
            },
            "ConsoleTaskRoleArn": {"Condition": HAS_CONSOLE, "Value": get_att("ConsoleTaskRole")},
        },
    }
