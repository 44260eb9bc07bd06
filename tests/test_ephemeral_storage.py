"""Each execution environment's /tmp, of the function's EphemeralStorage size (chaos/workload/scratch.py):
kept between the environment's invocations, refused past its size with the kernel's own ENOSPC, new with
each environment, and resized when the configuration changes."""

from __future__ import annotations

import uuid
from pathlib import Path

import boto3
import pytest

from chaos.sandbox import names
from chaos.workload import scratch
from chaos.workload.runtime import LocalLambdaRuntime
from tests.conftest import Undo
from tests.packages import python_function

# Writes ``mb`` MB to a file of its own in the temporary directory and leaves it there; answers with what
# the directory held before and where it is.
SPOOLER = """
import os, tempfile
def handler(event, context):
    directory = tempfile.gettempdir()
    before = sorted(os.listdir(directory))
    chunk = b"s" * (1 << 20)
    with open(os.path.join(directory, context.aws_request_id), "wb") as spool:
        for _ in range(event["mb"]):
            spool.write(chunk)
    return {"before": before, "directory": directory}
"""

NO_NAMESPACE = "this machine allows no mount namespace (not root, no user namespaces)"


def _spooler(operator: boto3.Session, undo: Undo, **settings: object) -> str:
    role = operator.client("iam").get_role(RoleName=names.ROLE_NAME)["Role"]["Arn"]
    name = f"spool-{uuid.uuid4().hex[:8]}"
    files = {"spool.py": SPOOLER}
    return python_function(operator.client("lambda"), undo, name, role, files, "spool.handler", **settings)


@pytest.mark.skipif(not scratch.enforced(), reason=NO_NAMESPACE)
def test_tmp_is_kept_between_invocations_and_a_write_past_its_size_fails_with_enospc(
    operator: boto3.Session, undo: Undo, runtime: LocalLambdaRuntime
) -> None:
    name = _spooler(operator, undo, MemorySize=256, Timeout=30)
    first = runtime.invoke(name, {"mb": 300})
    assert first.status == "succeeded", first.error
    assert first.result["before"] == []  # a new environment's /tmp is empty
    second = runtime.invoke(name, {"mb": 300})  # 600 MB of the default 512
    assert second.status == "failed"
    assert second.error == "OSError: [Errno 28] No space left on device"
    third = runtime.invoke(name, {"mb": 1})  # the environment is full still: it keeps its /tmp
    assert third.error == "OSError: [Errno 28] No space left on device"
    assert first.result["directory"] not in ("/tmp", "/var/tmp")  # the environment's own, not the host's


@pytest.mark.skipif(not scratch.enforced(), reason=NO_NAMESPACE)
def test_a_larger_size_takes_effect_in_the_environments_that_follow_the_change(
    operator: boto3.Session, undo: Undo, runtime: LocalLambdaRuntime
) -> None:
    name = _spooler(operator, undo, MemorySize=256, Timeout=30, EphemeralStorage={"Size": 1024})
    lambda_ = operator.client("lambda")
    for _ in range(3):  # 900 MB of 1024
        assert runtime.invoke(name, {"mb": 300}).status == "succeeded"
    assert runtime.invoke(name, {"mb": 300}).error == "OSError: [Errno 28] No space left on device"
    lambda_.update_function_configuration(FunctionName=name, EphemeralStorage={"Size": 512})
    lambda_.get_waiter("function_updated_v2").wait(FunctionName=name)
    fresh = runtime.invoke(name, {"mb": 500})  # a new environment, empty, of the new size
    assert fresh.status == "succeeded", fresh.error
    assert fresh.result["before"] == []
    assert runtime.invoke(name, {"mb": 20}).error == "OSError: [Errno 28] No space left on device"


def test_where_no_namespace_is_allowed_the_environment_runs_with_its_own_unsized_directory(
    operator: boto3.Session, undo: Undo, runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scratch, "enforced", lambda: False)
    assert scratch.wrapped(["worker"], Path("/x"), 512) == ["worker"]
    name = _spooler(operator, undo, MemorySize=256, Timeout=30)
    spooled = runtime.invoke(name, {"mb": 1})
    assert spooled.status == "succeeded", spooled.error
    directory = Path(spooled.result["directory"])
    assert directory.name == "tmp"
    assert directory.parent.name.startswith(f"lambda-{name}-")
