"""The sandbox's Node.js runtime, invoked through the sandbox's Lambda service: the world's Node.js function
stores its order, and each outcome is written in the words of Lambda's Node.js runtime interface client
(aws/aws-lambda-nodejs-runtime-interface-client 3.x, src/: Errors.js, LogPatch.js, UserFunction.js,
Runtime.js, CallbackContext.js, index.mjs; docs/sandbox.md, "Node.js runtime", cites each)."""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload import node_runtime
from chaos.workload.node_runtime import NodeRuntimeUnavailable
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from tests.packages import zip_files

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
Deploy = Callable[..., str]


@pytest.fixture(scope="module")
def deploy(sandbox: Sandbox) -> Iterator[Deploy]:
    """``deploy(files, handler=..., **configuration)``: a throwaway Node.js function with its log group,
    deleted after the module."""
    operator = sandbox.session(names.OPERATOR)
    lambda_, logs = operator.client("lambda"), operator.client("logs")
    role_arn = f"arn:aws:iam::{names.ACCOUNT_ID}:role/{names.ORDER_INTAKE_ROLE}"
    created: list[str] = []
    counter = itertools.count(1)

    def create(files: dict[str, str], handler: str = "index.handler", **configuration: Any) -> str:
        name = f"node-probe-{next(counter)}"
        logs.create_log_group(logGroupName=f"/aws/lambda/{name}")
        lambda_.create_function(
            **{
                "FunctionName": name,
                "Runtime": "nodejs22.x",
                "Role": role_arn,
                "Handler": handler,
                "Code": {"ZipFile": zip_files(files)},
                "Timeout": 3,
                "MemorySize": 256,
                **configuration,
            }
        )
        created.append(name)
        return name

    yield create
    for name in created:
        lambda_.delete_function(FunctionName=name)
        logs.delete_log_group(logGroupName=f"/aws/lambda/{name}")


STARTS = ("START", "platform.start")


def _function_lines(invocation: Invocation) -> list[str]:
    """What the function's runtime wrote during the invocation: the lines between its start and the next
    platform record (END, or platform.runtimeDone)."""
    lines = invocation.log_lines
    start = next(i for i, line in enumerate(lines) if (_platform(line) or {}).get("type") in STARTS)
    end = next(i for i in range(start + 1, len(lines)) if _platform(lines[i]) is not None)
    return lines[start + 1 : end]


def _platform(line: str) -> dict[str, Any] | None:
    """A platform record of either format as a dict (text lines as ``{"type": <first word>}``), else None."""
    if line.startswith(("INIT_START ", "INIT_REPORT ", "START RequestId: ", "END RequestId: ", "REPORT ")):
        return {"type": line.split(" ", 1)[0], "line": line}
    try:
        record = json.loads(line)
    except ValueError:
        return None
    is_platform = isinstance(record, dict) and str(record.get("type", "")).startswith("platform.")
    return record if is_platform else None


def _init_lines(invocation: Invocation, phase: str = "init") -> list[str]:
    """What the runtime wrote in an init phase (``init``: at the cold start; ``invoke``: the init Lambda
    runs again, suppressed, for an invocation after a failed one), in either log format."""
    lines: list[str] = []
    for line in invocation.log_lines:
        record = _platform(line)
        if record is None:
            lines.append(line)
            continue
        ended = (
            record["line"].split("\tPhase: ")[1].split("\t")[0]
            if record["type"] == "INIT_REPORT"
            else (record.get("record") or {}).get("phase")
            if record["type"] == "platform.initReport"
            else None
        )
        if ended == phase or (phase == "init" and record["type"] in ("START", "platform.start")):
            return lines
        if ended is not None:
            lines = []
    raise AssertionError(f"no init phase {phase} in {invocation.log_lines}")


def _record(line: str, request_id: str, level: str, head: str) -> dict[str, Any]:
    """The error document of a Text-format record ``<time>\\t<request id>\\t<LEVEL>\\t<head> \\t{...}``."""
    match = re.fullmatch(
        rf"{STAMP}\t{re.escape(request_id)}\t{level}\t{re.escape(head)} \t(\{{.*\}})\n", line
    )
    assert match, line
    document: dict[str, Any] = json.loads(match[1])
    return document


def _user_frame(module: str, line: int, column: int, function: str | None = "Runtime.handler") -> str:
    """A stack frame in the function's own code, in its execution environment's task directory."""
    task = rf"{re.escape(tempfile.gettempdir())}/lambda-node-probe-\d+-[^/]+/task"
    where = rf"file://{task}/{re.escape(module)}:{line}:{column}"
    return rf"    at {re.escape(function)} \({where}\)" if function else rf"    at {where}"


def test_order_intake_stores_the_order_with_the_sdk(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    invocation = runtime.invoke(names.ORDER_INTAKE_FUNCTION, names.order_submission(12.5, "c-42", "web-777"))

    assert invocation.status == "succeeded", invocation.error
    assert invocation.result == {
        "statusCode": 201,
        "headers": {"Content-Type": "application/json"},
        "body": '{"order_id":"web-777"}',
    }
    item = (
        sandbox.session(names.OPERATOR)
        .client("dynamodb")
        .get_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": "web-777"}})["Item"]
    )
    assert {k: v for k, v in item.items() if k != "received_at"} == {
        "order_id": {"S": "web-777"},
        "amount": {"N": "12.5"},
        "customer": {"S": "c-42"},
    }
    assert re.fullmatch(STAMP, item["received_at"]["S"])
    [line] = _function_lines(invocation)
    assert re.fullmatch(rf"{STAMP}\t{invocation.request_id}\tINFO\tstored order web-777 for c-42\n", line)
    assert invocation.logs_written


def test_commonjs_nested_paths_and_package_type_module(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    commonjs = deploy({"index.js": "exports.handler = async (event) => ({ style: 'cjs', got: event.n });"})
    nested = deploy(
        {"src/api/orders.cjs": "module.exports.routes = { create: async () => 'nested' };"},
        handler="src/api/orders.routes.create",
    )
    typed = deploy(
        {"package.json": '{"type": "module"}', "app.js": "export const handler = async () => 'esm .js';"},
        handler="app.handler",
    )

    assert runtime.invoke(commonjs, {"n": 7}).result == {"style": "cjs", "got": 7}
    assert runtime.invoke(nested, {}).result == "nested"
    assert runtime.invoke(typed, {}).result == "esm .js"


def test_the_context_object_and_the_environment(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy(
        {
            "index.mjs": """
import { S3Client } from "@aws-sdk/client-s3";
import { createRequire } from "node:module";
const { DynamoDBClient } = createRequire(import.meta.url)("@aws-sdk/client-dynamodb");
export const handler = async (event, context) => ({
  awsRequestId: context.awsRequestId,
  invokedFunctionArn: context.invokedFunctionArn,
  functionName: context.functionName,
  functionVersion: context.functionVersion,
  memoryLimitInMB: context.memoryLimitInMB,
  logGroupName: context.logGroupName,
  remaining: context.getRemainingTimeInMillis(),
  waits: context.callbackWaitsForEmptyEventLoop,
  executionEnv: process.env.AWS_EXECUTION_ENV,
  logFormat: process.env.AWS_LAMBDA_LOG_FORMAT,
  keyPrefix: process.env.AWS_ACCESS_KEY_ID.slice(0, 4),
  sdk: [typeof S3Client, typeof DynamoDBClient],
});
"""
        },
        MemorySize=192,
    )

    invocation = runtime.invoke(name, {})

    assert invocation.status == "succeeded", invocation.error
    seen = invocation.result
    assert 2000 < seen.pop("remaining") <= 3000
    assert seen == {
        "awsRequestId": invocation.request_id,
        "invokedFunctionArn": f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:{name}",
        "functionName": name,
        "functionVersion": "$LATEST",
        "memoryLimitInMB": "192",
        "logGroupName": f"/aws/lambda/{name}",
        "waits": True,
        "executionEnv": "AWS_Lambda_nodejs22.x",
        "logFormat": "TEXT",
        "keyPrefix": "ASIA",  # the role's temporary credentials
        "sdk": ["function", "function"],  # from import (ES module) and require (CommonJS)
    }


def test_a_callback_waits_for_the_event_loop_unless_told_not_to(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    source = """
exports.handler = (event, context, callback) => {
  context.callbackWaitsForEmptyEventLoop = event.wait;
  setTimeout(() => console.log("timer done"), 300);
  callback(null, { answered: true });
};
"""
    name = deploy({"index.js": source})

    waited = runtime.invoke(name, {"wait": True})
    answered = runtime.invoke(name, {"wait": False})

    assert (waited.result, answered.result) == ({"answered": True}, {"answered": True})
    [warning] = _init_lines(waited)
    assert re.fullmatch(
        rf"{STAMP}\tundefined\tWARN\tAWS Lambda plans to remove support for callback-based function handlers "
        r"starting with Node\.js 24\. .* To disable this warning, set the "
        r"AWS_LAMBDA_NODEJS_DISABLE_CALLBACK_WARNING environment variable\.\n",
        warning,
    )
    [timer] = _function_lines(waited)
    assert re.fullmatch(rf"{STAMP}\t{waited.request_id}\tINFO\ttimer done\n", timer)
    assert waited.duration_ms >= 300
    assert _function_lines(answered) == []
    assert answered.duration_ms < 300


def test_an_error_from_the_handler_is_an_invoke_error_record(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    name = deploy(
        {
            "index.mjs": "export const handler = async (event) => {\n"
            "  const error = new TypeError(`no amount in order ${event.id}`);\n"
            "  error.code = 'ORDER_INVALID';\n"
            "  throw error;\n"
            "};\n"
        }
    )

    invocation = runtime.invoke(name, {"id": "o-1"})

    assert (invocation.status, invocation.error_type) == ("failed", "TypeError")
    assert invocation.error == "TypeError: no amount in order o-1"
    [line] = _function_lines(invocation)
    record = _record(line, invocation.request_id, "ERROR", "Invoke Error")
    stack = record.pop("stack")
    assert record == {
        "errorType": "TypeError",
        "errorMessage": "no amount in order o-1",
        "code": "ORDER_INVALID",
    }
    assert stack[0] == "TypeError: no amount in order o-1"
    assert re.fullmatch(_user_frame("index.mjs", 2, 17), stack[1])


def test_an_unhandled_rejection_fails_the_invocation_and_ends_the_process(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    name = deploy(
        {
            "index.mjs": "export const handler = async () => {\n"
            "  Promise.reject(new Error('queue unreachable'));\n"
            "  await new Promise((resolve) => setTimeout(resolve, 200));\n"
            "  return 'not reached';\n"
            "};\n"
        }
    )

    first, second = runtime.invoke(name, {}), runtime.invoke(name, {})

    assert (first.status, first.error) == (
        "failed",
        "Runtime.UnhandledPromiseRejection: Error: queue unreachable",
    )
    [line] = _function_lines(first)
    record = _record(line, first.request_id, "ERROR", "Unhandled Promise Rejection")
    reason, stack = record.pop("reason"), record.pop("stack")
    assert record == {
        "errorType": "Runtime.UnhandledPromiseRejection",
        "errorMessage": "Error: queue unreachable",
        "promise": {},
    }
    assert (reason["errorType"], reason["errorMessage"]) == ("Error", "queue unreachable")
    assert re.fullmatch(_user_frame("index.mjs", 2, 18), reason["stack"][1])
    assert stack[0] == "Runtime.UnhandledPromiseRejection: Error: queue unreachable"
    assert second.init_duration_ms is not None  # the process ended (exit 128): a new environment


def test_a_missing_module_fails_init_and_every_invocation(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    name = deploy({"index.js": "const schema = require('order-schema');\nexports.handler = async () => 1;\n"})

    first, second = runtime.invoke(name, {}), runtime.invoke(name, {})

    message = "Error: Cannot find module 'order-schema'\nRequire stack:\n"
    for invocation in (first, second):
        assert (invocation.status, invocation.error_type) == ("failed", "Runtime.ImportModuleError")
        assert invocation.error is not None
        assert invocation.error.startswith(f"Runtime.ImportModuleError: {message}")
    [line] = _init_lines(first)
    record = _record(line, "undefined", "ERROR", "Uncaught Exception")
    assert record["errorType"] == "Runtime.ImportModuleError"
    assert record["errorMessage"].startswith(message)
    assert re.fullmatch(r"- .*/task/index\.js", record["errorMessage"].split("\n")[2])
    assert record["stack"][0] == f"Runtime.ImportModuleError: {message.splitlines()[0]}"
    [again] = _init_lines(second, "invoke")  # the init runs again, before the invocation, and fails alike
    assert (
        _record(again, "undefined", "ERROR", "Uncaught Exception")["errorType"] == "Runtime.ImportModuleError"
    )


def test_an_es_module_with_a_missing_package_keeps_node_error(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    name = deploy({"index.mjs": "import pad from 'left-pad';\nexport const handler = async () => pad;\n"})

    invocation = runtime.invoke(name, {})

    assert invocation.error_type == "Error"
    [line] = _init_lines(invocation)
    record = _record(line, "undefined", "ERROR", "Uncaught Exception")
    assert (record["errorType"], record["code"]) == ("Error", "ERR_MODULE_NOT_FOUND")
    assert re.fullmatch(
        r"Cannot find package 'left-pad' imported from .*/task/index\.mjs", record["errorMessage"]
    )


def test_a_handler_that_is_not_exported_is_not_found(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy({"index.mjs": "export const main = async () => 1;\n"})

    invocation = runtime.invoke(name, {})

    assert invocation.error == "Runtime.HandlerNotFound: index.handler is undefined or not exported"
    [line] = _init_lines(invocation)
    record = _record(line, "undefined", "ERROR", "Uncaught Exception")
    assert record["stack"][0] == "Runtime.HandlerNotFound: index.handler is undefined or not exported"


@pytest.mark.parametrize(
    ("files", "handler", "error"),
    [
        ({"index.mjs": "export const handler = async ( => 1;\n"}, "index.handler",
         "Runtime.UserCodeSyntaxError: SyntaxError: Unexpected token '=>'"),
        ({"index.mjs": ""}, "index", "Runtime.MalformedHandlerName: Bad handler"),
        ({"index.mjs": ""}, "../index.handler",
         "Runtime.MalformedHandlerName: '../index.handler' is not a valid handler name. Use absolute paths "
         "when specifying root directories in handler names."),
    ],
    ids=["syntax", "no-function", "relative-path"],
)  # fmt: skip
def test_code_that_cannot_load_fails_with_the_runtime_error(
    deploy: Deploy, runtime: LocalLambdaRuntime, files: dict[str, str], handler: str, error: str
) -> None:
    invocation = runtime.invoke(deploy(files, handler=handler), {})

    assert (invocation.status, invocation.error) == ("failed", error)


def test_an_exception_at_init_is_an_uncaught_exception(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy(
        {
            "index.mjs": "const table = process.env.TABLE_NAME;\n"
            "if (!table) throw new Error('TABLE_NAME is not set');\n"
            "export const handler = async () => table;\n"
        }
    )

    invocation = runtime.invoke(name, {})

    assert (invocation.error_type, invocation.error) == ("Error", "Error: TABLE_NAME is not set")
    [line] = _init_lines(invocation)
    record = _record(line, "undefined", "ERROR", "Uncaught Exception")
    assert (record["errorType"], record["errorMessage"]) == ("Error", "TABLE_NAME is not set")
    assert re.fullmatch(_user_frame("index.mjs", 2, 19, function=None), record["stack"][1])


def test_a_timeout_kills_the_invocation(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy(
        {"index.mjs": "export const handler = () => new Promise((resolve) => setTimeout(resolve, 5000));\n"},
        Timeout=1,
    )

    invocation = runtime.invoke(name, {})

    assert invocation.status == "timed_out"
    assert 1000 <= invocation.duration_ms < 1500
    assert any(
        re.fullmatch(rf"{STAMP} {invocation.request_id} Task timed out after 1\.00 seconds\n", line)
        for line in invocation.log_lines
    )


def test_resident_memory_past_the_memory_size_kills_the_process(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    source = """
const held = [];
export const handler = async (event) => {
  for (let mb = 0; mb < event.mb; mb++) {
    held.push(Buffer.alloc(1024 * 1024, 1));  // outside V8's heap: resident, as a large payload is
    await new Promise((resolve) => setImmediate(resolve));
  }
  return held.length;
};
"""
    name = deploy({"index.mjs": source}, MemorySize=128)

    fits = runtime.invoke(name, {"mb": 10})
    killed = runtime.invoke(name, {"mb": 300})

    assert fits.status == "succeeded", fits.error
    assert 30 < fits.max_memory_mb < 128
    assert (killed.status, killed.error) == ("out_of_memory", "Runtime exited with error: signal: killed")
    assert killed.max_memory_mb == 128


def test_process_exit_in_the_handler_ends_the_runtime(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy({"index.mjs": "export const handler = async () => { process.exit(3); };\n"})

    invocation = runtime.invoke(name, {})

    assert (invocation.status, invocation.error_type) == ("failed", "Runtime.ExitError")
    assert invocation.error == "Runtime exited with error: exit status 3"


def test_a_promise_that_never_settles_is_a_node_exit(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy({"index.mjs": "export const handler = async () => { await new Promise(() => {}); };\n"})

    invocation = runtime.invoke(name, {})

    assert invocation.error_type == "Runtime.NodeJsExit"
    [line] = _function_lines(invocation)
    record = _record(line, invocation.request_id, "ERROR", "Invoke Error")
    assert record["errorMessage"].startswith(
        "The Lambda runtime client detected an unexpected Node.js exit code."
    )


def test_text_console_records(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    source = """
export const handler = async () => {
  console.log("order %s", "o-9", { amount: 3 });
  console.debug("cache miss");
  console.trace("entering");
  console.warn("two\\nlines");
  console.error("failed:", new RangeError("too many"));
  process.stdout.write("raw line\\n");
  return "ok";
};
"""
    invocation = runtime.invoke(deploy({"index.mjs": source}), {})

    rid = invocation.request_id
    log, debug, trace, warn, error, raw = _function_lines(invocation)
    assert re.fullmatch(rf"{STAMP}\t{rid}\tINFO\torder o-9 {{ amount: 3 }}\n", log)
    assert re.fullmatch(rf"{STAMP}\t{rid}\tDEBUG\tcache miss\n", debug)
    assert re.fullmatch(rf"{STAMP}\t{rid}\tTRACE\tentering\n", trace)
    assert re.fullmatch(rf"{STAMP}\t{rid}\tWARN\ttwo\nlines\n", warn)  # one event, its newline kept
    frame = _user_frame("index.mjs", 7, 28)
    assert re.fullmatch(rf"{STAMP}\t{rid}\tERROR\tfailed: RangeError: too many\n{frame}\n.*", error, re.S)
    assert raw == "raw line\n"


def _json_records(lines: list[str]) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in lines]
    for record in records:
        assert re.fullmatch(STAMP, record.pop("timestamp"))
    return records


def test_json_records_and_application_log_level(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    source = """
export const handler = async () => {
  console.trace("t");
  console.debug("d");
  console.info("i");
  console.log({ order: "o-9" });
  console.warn("low stock", { sku: "s-1" });
  console.error("charge failed", new RangeError("card declined"));
  console.fatal("giving up");
  throw new TypeError("no order");
};
"""
    name = deploy({"index.mjs": source}, LoggingConfig={"LogFormat": "JSON", "ApplicationLogLevel": "WARN"})

    invocation = runtime.invoke(name, {})

    rid = invocation.request_id
    warn, error, fatal, invoke_error = _json_records(_function_lines(invocation))
    assert warn == {"level": "WARN", "requestId": rid, "message": "low stock { sku: 's-1' }"}
    stack_trace = error.pop("stackTrace")
    assert error.pop("message").startswith("charge failed RangeError: card declined\n    at Runtime.handler")
    assert error == {
        "level": "ERROR",
        "requestId": rid,
        "errorType": "RangeError",
        "errorMessage": "card declined",
    }
    assert stack_trace[0] == "RangeError: card declined"
    assert re.fullmatch(_user_frame("index.mjs", 8, 34), stack_trace[1])
    assert fatal == {"level": "FATAL", "requestId": rid, "message": "giving up"}
    assert invoke_error["message"].pop("stackTrace")[0] == "TypeError: no order"
    assert invoke_error == {
        "level": "ERROR",
        "requestId": rid,
        "message": {"errorType": "TypeError", "errorMessage": "no order"},
    }
    assert invocation.error == "TypeError: no order"


def test_json_records_below_info_and_outside_an_invocation(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    source = 'console.info("loading");\nexport const handler = async () => { console.debug({ step: 1 }); };\n'
    name = deploy({"index.mjs": source}, LoggingConfig={"LogFormat": "JSON", "ApplicationLogLevel": "DEBUG"})

    invocation = runtime.invoke(name, {})

    assert _json_records(_init_lines(invocation)) == [{"level": "INFO", "message": "loading"}]  # no requestId
    assert _json_records(_function_lines(invocation)) == [
        {"level": "DEBUG", "requestId": invocation.request_id, "message": {"step": 1}}
    ]


def test_a_runtime_the_sandbox_does_not_emulate_is_refused(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    name = deploy({"index.mjs": "export const handler = async () => 1;\n"}, Runtime="nodejs24.x")

    refused = r"emulates Lambda's nodejs20\.x, nodejs22\.x runtimes .* not nodejs24\.x"
    with pytest.raises(NodeRuntimeUnavailable, match=refused):
        runtime.invoke(name, {})


def test_without_the_sdk_a_node_function_does_not_start(
    runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(node_runtime, "_SDK_PROBE", tmp_path / "absent" / "package.json")

    with pytest.raises(NodeRuntimeUnavailable, match=r"not installed in .*node_sdk: run `make sandbox`"):
        runtime.invoke(names.ORDER_INTAKE_FUNCTION, names.order_submission())


def test_an_exception_in_a_timer_fails_the_invocation_and_ends_the_process(
    deploy: Deploy, runtime: LocalLambdaRuntime
) -> None:
    source = (
        "export const handler = async () => {\n"
        "  setTimeout(() => { throw new Error('flush failed'); }, 10);\n"
        "  await new Promise((resolve) => setTimeout(resolve, 500));\n"
        "};\n"
    )
    name = deploy({"index.mjs": source})

    first, second = runtime.invoke(name, {}), runtime.invoke(name, {})

    assert (first.error_type, first.error) == ("Error", "Error: flush failed")
    [line] = _function_lines(first)
    record = _record(line, first.request_id, "ERROR", "Uncaught Exception")
    assert (record["errorType"], record["errorMessage"]) == ("Error", "flush failed")
    assert re.fullmatch(_user_frame("index.mjs", 2, 28, function="Timeout._onTimeout"), record["stack"][1])
    assert second.init_duration_ms is not None  # the process ended (exit 129): a new environment


def test_a_json_init_error_names_the_error_class(deploy: Deploy, runtime: LocalLambdaRuntime) -> None:
    name = deploy(
        {"index.js": "require('order-schema');\nexports.handler = async () => 1;\n"},
        LoggingConfig={"LogFormat": "JSON"},
    )

    invocation = runtime.invoke(name, {})

    assert invocation.error_type == "Runtime.ImportModuleError"
    [record] = _json_records(_init_lines(invocation))
    message = record.pop("message")
    assert record == {"level": "ERROR"}  # outside any invocation: no requestId
    assert message["errorType"] == "ImportModuleError"  # the JSON logger writes the constructor's name
    assert message["errorMessage"].startswith("Error: Cannot find module 'order-schema'\nRequire stack:\n")
    assert message["stackTrace"][0] == "Runtime.ImportModuleError: Error: Cannot find module 'order-schema'"
