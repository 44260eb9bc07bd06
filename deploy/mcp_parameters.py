"""The MCP server stack's inputs: its parameters, the conditions drawn from them, and the Rules that refuse
an incomplete set of OAuth parameters at deploy time."""

from __future__ import annotations

from typing import Any

from deploy.cfn import ref
from supervisor.incident import resources

HAS_HOST_NAME = "HasHostName"
HAS_CROSS_ACCOUNT_ROLES = "HasCrossAccountRoles"
HAS_CONSOLE = "HasConsole"
HAS_OAUTH = "HasOAuth"
HAS_OAUTH_SCOPES = "HasOAuthScopes"
HAS_CONSOLE_DECISIONS = "HasConsoleDecisions"  # people decide on plans on the console's pages
# OAuth 2.1 resource-server mode (mcp_server/settings.py) for both services, when OAuthIssuer is set.
OAUTH_PARAMETERS = ("OAuthIssuer", "OAuthAudience", "OAuthScopes", "ConsoleOAuthClientId")
Template = dict[str, Any]


def _placement() -> Template:
    """Where the stack runs: the network, the image and the listener's certificate and callers."""
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
    }


def _mcp_server() -> Template:
    """The MCP server's key, host name, task count and the other accounts its tools may read."""
    return {
        "McpKeyParameterName": {
            "Type": "String",
            "Default": resources.MCP_KEY_PARAMETER,
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
    }


def _console_enabled() -> Template:
    return {
        "ConsoleEnabled": {
            "Type": "String",
            "Default": "false",
            "AllowedValues": ["false", "true"],
            "Description": "Also run the read-only incident console (same image) behind the listener, "
            "at /incidents; browsers sign in with the MCP server's key at /auth/login, or with OAuthIssuer "
            "at the identity provider.",
        },
    }


def _oauth() -> Template:
    """OAUTH_PARAMETERS: all empty (bearer keys only), or an issuer with what it requires (see rules)."""
    return {
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
    }


def _console_tables() -> Template:
    """The tables of the incident-response stack, which the console reads, and what a decision on a plan
    writes to (with ConsoleApprovers)."""
    return {
        "ConsoleApprovers": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": r"^(console:[^,\s]+)?(\s*,\s*console:[^,\s]+)*$",
            "Description": "People who may approve or reject plans on the console, as console:<the OAuth "
            "token's sub>, comma-separated; the incident-response stack's RemediationApprovers must name "
            "them too, or the executor does not count their decisions. Requires OAuthIssuer. Empty: "
            "decisions are made with incident-remediate only, and the console writes nothing.",
        },
        "ApprovalsTableName": {
            "Type": "String",
            "Default": resources.APPROVALS_TABLE,
            "Description": "The incident-approvals table a console decision is written to.",
        },
        "RemediationQueueName": {
            "Type": "String",
            "Default": resources.REMEDIATION_QUEUE,
            "Description": "The executor's queue, asked to look after a console decision.",
        },
        "StateTableName": {
            "Type": "String",
            "Default": resources.STATE_TABLE,
            "Description": "The incident-state table the console reads (the StateTableName output of the "
            "incident-response stack).",
        },
        "ContextTableName": {
            "Type": "String",
            "Default": resources.CONTEXT_TABLE,
            "Description": "The incident-context table the console reads.",
        },
    }


def parameters() -> Template:
    return _placement() | _mcp_server() | _console_enabled() | _oauth() | _console_tables()


def _is_set(name: str) -> Template:
    return {"Fn::Not": [{"Fn::Equals": [ref(name), ""]}]}


def conditions() -> Template:
    return {
        HAS_HOST_NAME: _is_set("PublicHostName"),
        HAS_CROSS_ACCOUNT_ROLES: {
            "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", ref("CrossAccountRoleArns")]}, ""]}]
        },
        HAS_CONSOLE: {"Fn::Equals": [ref("ConsoleEnabled"), "true"]},
        HAS_OAUTH: _is_set("OAuthIssuer"),
        HAS_OAUTH_SCOPES: {"Fn::And": [{"Condition": HAS_OAUTH}, _is_set("OAuthScopes")]},
        HAS_CONSOLE_DECISIONS: {
            "Fn::And": [{"Condition": HAS_CONSOLE}, {"Condition": HAS_OAUTH}, _is_set("ConsoleApprovers")]
        },
    }


def rules() -> Template:
    """Deploy-time checks of the OAuth parameters (the services would otherwise fail at start, or ignore
    them): an issuer needs an audience, and the console a client id; without an issuer, none is set."""
    issuer_set = _is_set("OAuthIssuer")
    return {
        "OAuthAudienceWithIssuer": {
            "RuleCondition": issuer_set,
            "Assertions": [
                {
                    "Assert": _is_set("OAuthAudience"),
                    "AssertDescription": "OAuthIssuer requires OAuthAudience (the tokens' aud).",
                }
            ],
        },
        "ConsoleOAuthClientWithIssuer": {
            "RuleCondition": {"Fn::And": [issuer_set, {"Fn::Equals": [ref("ConsoleEnabled"), "true"]}]},
            "Assertions": [
                {
                    "Assert": _is_set("ConsoleOAuthClientId"),
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
                for name in (*OAUTH_PARAMETERS[1:], "ConsoleApprovers")
            ],
        },
    }
