"""The product's region comes from the AWS configuration chain, never from a default of its own: with none
configured the Bedrock model, the MCP server and the console refuse to start and say what to set."""

from __future__ import annotations

import ast
from pathlib import Path

import boto3
import pytest
from langchain_aws import ChatBedrockConverse

from chaos.drill.infra import infra_fault
from chaos.drill.settings import DrillSettings
from chaos.sandbox import names
from console import cli as console_cli
from evals.adversarial_models import serving_adversary
from mcp_server import cli as mcp_cli
from mcp_server.aws import AwsClients, RegionNotConfigured, default_session
from mcp_server.settings import ServerSettings
from supervisor.agent.models import build_model
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("mcp_server", "supervisor", "executor", "watchdog", "console", "deploy")
PROFILE_MODEL = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
WHAT_TO_SET = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An AWS configuration chain that names no region: no region variables, no profile, empty files.
    Returns the (empty) config file."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text("")
    credentials.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # boto3 keeps the config it first read
    return config


def _says_what_to_set(message: str) -> None:
    for setting in WHAT_TO_SET:
        assert setting in message, message
    assert "ca-central-1" not in message


def test_bedrock_without_a_configured_region_is_a_config_error(no_region: Path) -> None:
    with pytest.raises(AgentError) as raised:
        build_model(PROFILE_MODEL, SupervisorSettings())
    assert raised.value.category == "config"
    _says_what_to_set(raised.value.message)


@pytest.mark.parametrize("variable", ["AWS_REGION", "AWS_DEFAULT_REGION"])
def test_bedrock_uses_the_region_the_environment_names(
    no_region: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "eu-west-3")
    model = build_model(PROFILE_MODEL, SupervisorSettings())
    assert isinstance(model, ChatBedrockConverse)
    assert (model.region_name, model.client.meta.region_name) == ("eu-west-3", "eu-west-3")
    assert model.model_id == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert model.disable_streaming is True  # Converse only: the role grants bedrock:InvokeModel alone


def test_bedrock_uses_the_region_of_the_selected_profile(
    no_region: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_region.write_text("[profile reader]\nregion = ap-southeast-2\n")
    monkeypatch.setenv("AWS_PROFILE", "reader")
    model = build_model(PROFILE_MODEL, SupervisorSettings())
    assert isinstance(model, ChatBedrockConverse)
    assert model.region_name == "ap-southeast-2"


def test_the_stage_s_fake_bedrock_endpoints_name_the_sandbox_s_region(no_region: Path) -> None:
    """The drill's Bedrock-refusal scenario and the served adversary give the product a region, as a user
    must: the product no longer supplies one."""
    with infra_fault("bedrock-403", "http://127.0.0.1:9", DrillSettings()) as fault:
        drill_model = build_model(fault.overrides["supervisor_model"], SupervisorSettings())
    with serving_adversary() as spec:
        adversary = build_model(spec, SupervisorSettings())
    for model in (drill_model, adversary):
        assert isinstance(model, ChatBedrockConverse)
        assert model.region_name == names.DEFAULT_REGION


def test_the_mcp_server_without_a_configured_region_says_what_to_set(no_region: Path) -> None:
    with pytest.raises(RegionNotConfigured) as raised:
        default_session()
    _says_what_to_set(str(raised.value))
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b")
    with pytest.raises(RegionNotConfigured):
        AwsClients(ServerSettings(mcp_api_key="k" * 32), session)


def test_the_mcp_server_reads_the_region_the_chain_names(
    no_region: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "sa-east-1")
    assert default_session().region_name == "sa-east-1"
    monkeypatch.setenv("AWS_REGION", "eu-north-1")  # before AWS_DEFAULT_REGION, as the AWS SDKs read it
    assert default_session().region_name == "eu-north-1"
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-west-1")
    assert AwsClients(ServerSettings(mcp_api_key="k" * 32), session).region == "us-west-1"


def test_both_servers_refuse_to_start_without_a_region(
    no_region: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert mcp_cli.main(["--transport", "stdio"]) == 2
    assert console_cli.main([]) == 2
    errors = capsys.readouterr().err
    assert "incident-mcp-server: AWS configuration problem: no AWS region is configured" in errors
    assert "incident-console: no AWS region is configured" in errors
    _says_what_to_set(errors)


def test_no_product_module_names_the_sandbox_region_as_a_value() -> None:
    """ca-central-1 is the sandbox's region (chaos/): in the product it may appear inside an example in a
    message, never as a value of its own."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "ca-central-1"
    ]
    assert found == []
