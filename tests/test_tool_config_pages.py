"""get_lambda_config reads every page of versions (ListVersionsByFunction ``Marker``) and keeps the newest;
the server's AWS clients hold more connections than the threads that share them."""

from __future__ import annotations

import io
import zipfile

import boto3
import pytest
from botocore.stub import Stubber

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract import GetLambdaConfigArgs
from mcp_server.server import READ_THREADS
from mcp_server.settings import ServerSettings
from mcp_server.tools import lambda_config as config_tool
from mcp_server.tools.lambda_config import MAX_VERSIONS, lambda_config
from tests.tool_support import call_tool

FUNCTION = "many-versions"
PUBLISHED = 55  # more than one ListVersionsByFunction page (50)


def _package(release: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "app.py", f"RELEASE = {release}\n\ndef handler(event, context):\n    return RELEASE\n"
        )
    return buffer.getvalue()


@pytest.fixture(scope="module")
def many_versions(sandbox: Sandbox) -> str:
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    lambda_.create_function(
        FunctionName=FUNCTION,
        Runtime="python3.12",
        Role=sandbox.world.role_arn,
        Handler="app.handler",
        Code={"ZipFile": _package(0)},
    )
    for release in range(1, PUBLISHED + 1):
        lambda_.update_function_code(FunctionName=FUNCTION, ZipFile=_package(release))
        lambda_.publish_version(FunctionName=FUNCTION, Description=f"release {release}")
    return FUNCTION


def test_the_newest_versions_are_kept(sandbox: Sandbox, many_versions: str) -> None:
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))

    config = call_tool(aws, lambda_config, GetLambdaConfigArgs(lambda_name=many_versions))

    assert [v.Version for v in config.Versions] == [
        "$LATEST",
        *(str(n) for n in range(PUBLISHED, PUBLISHED - MAX_VERSIONS + 1, -1)),
    ]
    assert config.Versions[1].Description == f"release {PUBLISHED}"
    assert config.gaps == []


def test_clients_have_more_connections_than_the_threads_sharing_them(sandbox: Sandbox) -> None:
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    anyio_worker_threads = 40  # anyio's default limiter, which runs each tool call
    for service in ("lambda", "iam", "ec2", "logs", "cloudwatch", "cloudtrail"):
        assert aws.client(service).meta.config.max_pool_connections > max(READ_THREADS, anyio_worker_threads)


def test_every_page_is_followed_by_its_marker() -> None:
    """Against a stub of the Lambda API, since the emulator ignores MaxItems and never pages."""
    client = boto3.client(
        "lambda", region_name=names.DEFAULT_REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )

    def version(number: str) -> dict[str, str]:
        return {"Version": number, "FunctionName": FUNCTION, "CodeSha256": f"sha-{number}"}

    with Stubber(client) as stub:
        first = {
            "Versions": [version("$LATEST"), *(version(str(n)) for n in range(1, 11))],
            "NextMarker": "m1",
        }
        stub.add_response("list_versions_by_function", first, {"FunctionName": FUNCTION, "MaxItems": 10})
        second = {"Versions": [version(str(n)) for n in range(11, 26)]}
        stub.add_response(
            "list_versions_by_function", second, {"FunctionName": FUNCTION, "MaxItems": 10, "Marker": "m1"}
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(config_tool, "VERSIONS_PAGE", 10)
            versions = config_tool._versions(client, FUNCTION)
        stub.assert_no_pending_responses()

    assert [v.Version for v in versions] == [
        "$LATEST",
        *(str(n) for n in range(25, 25 - MAX_VERSIONS + 1, -1)),
    ]
