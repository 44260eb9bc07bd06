"""Our two moto fixes are needed (released moto fails without them) and work (our sandbox passes).

If the first test fails, moto changed upstream: re-check `chaos/sandbox/moto_fixes.py` and drop the fix
that is no longer needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox


@pytest.fixture(scope="module")
def unpatched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with running_sandbox(Path(tmp_path_factory.mktemp("unpatched")), unpatched=True) as sandbox:
        yield sandbox


def _signed_get_error(sandbox: Sandbox) -> str | None:
    client = sandbox.session(names.OPERATOR).client("lambda")
    try:
        client.get_function_configuration(FunctionName=names.FUNCTION_NAME)
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return None


def _json_denial_code(sandbox: Sandbox) -> str:
    client = sandbox.session(names.MCP_SERVER).client("logs")
    with pytest.raises(ClientError) as caught:
        client.delete_log_group(logGroupName=names.LOG_GROUP)
    return str(caught.value.response["Error"]["Code"])


def test_released_moto_still_has_both_bugs(unpatched: Sandbox) -> None:
    assert _signed_get_error(unpatched) == "403", "moto now verifies signed GETs: remove fix 1"
    assert _json_denial_code(unpatched) == "403", (
        "moto now answers JSON-protocol denials in JSON: remove fix 2"
    )


def test_fixed_sandbox_verifies_signed_gets_and_answers_denials_in_json(sandbox: Sandbox) -> None:
    assert _signed_get_error(sandbox) is None
    assert _json_denial_code(sandbox) == "AccessDeniedException"
