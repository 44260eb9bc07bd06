"""Lambda log events of every runtime and both log formats, for the logs tool's envelope.

Every sample says where it comes from. ``recorded``: the lines as a public source shows them (AWS's
documentation, a GitHub issue that quotes CloudWatch Logs), cut only where the stored copy is cut.
``rendered``: written with a runtime's own formatting code (cited by repository and path) from values a
recorded source shows; nothing is written from memory. ``hostile``: what a function can print to imitate a
platform record, built on the real shapes above. Repositories: AWS's documentation source is
github.com/awsdocs/aws-lambda-developer-guide (``doc_source/``, commit 4f313b9^, the last before the
markdown was retired); the runtime clients are github.com/aws/aws-lambda-python-runtime-interface-client,
aws-lambda-nodejs-runtime-interface-client, aws-lambda-java-libs, aws-lambda-dotnet, aws-lambda-go and
aws-lambda-ruby-runtime-interface-client; the platform's own formats are in
github.com/aws/aws-lambda-runtime-interface-emulator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

STREAM = "2024/01/01/[$LATEST]0123456789abcdef0123456789abcdef"
START_MS = 1_700_000_000_000


@dataclass(frozen=True)
class Sample:
    source: str
    messages: tuple[str, ...]

    def events(self, stream: str = STREAM, start_ms: int = START_MS) -> list[dict[str, Any]]:
        """The messages as FilterLogEvents returns them, one millisecond apart, in one log stream."""
        return [
            {
                "eventId": f"{stream}-{n}",
                "timestamp": start_ms + n,
                "message": message,
                "logStreamName": stream,
            }
            for n, message in enumerate(self.messages)
        ]


def _node_record(time: str, request_id: str, what: str, error: dict[str, Any]) -> str:
    """aws-lambda-nodejs-runtime-interface-client src/LogPatch.js ``logTextToFd`` and src/Errors.js
    ``toFormatted``: util.format(what, '\\t' + JSON.stringify(error)) after time, request id and level."""
    return f"{time}\t{request_id}\tERROR\t{what} \t{json.dumps(error, separators=(',', ':'))}"


def _json(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"))


# --------------------------------------------------------------------------------------------- text format

PYTHON_TEXT_SUCCESS = Sample(
    "recorded: awsdocs/aws-lambda-developer-guide doc_source/python-logging.md, 'Example log format' "
    "(the documentation prints the tabs as spaces)",
    (
        "START RequestId: 8f507cfc-xmpl-4697-b07a-ac58fc914c95 Version: $LATEST",
        "## ENVIRONMENT VARIABLES",
        "environ({'AWS_LAMBDA_LOG_GROUP_NAME': '/aws/lambda/my-function', 'AWS_LAMBDA_LOG_STREAM_NAME': "
        "'2020/01/31/[$LATEST]3893xmpl7fac4485b47bb75b671a283c', 'AWS_LAMBDA_FUNCTION_NAME': 'my-function', "
        "...})",
        "## EVENT",
        "{'key': 'value'}",
        "END RequestId: 8f507cfc-xmpl-4697-b07a-ac58fc914c95",
        "REPORT RequestId: 8f507cfc-xmpl-4697-b07a-ac58fc914c95  Duration: 15.74 ms  Billed Duration: 16 ms "
        "Memory Size: 128 MB Max Memory Used: 56 MB  Init Duration: 130.49 ms",
    ),
)

NODE_REQUEST = "c793869b-ee49-115b-a5b6-4fd21e8dedac"
NODE_START = f"START RequestId: {NODE_REQUEST} Version: $LATEST"
NODE_END = f"END RequestId: {NODE_REQUEST}"
NODE_REPORT = (
    f"REPORT RequestId: {NODE_REQUEST}\tDuration: 128.83 ms\tBilled Duration: 200 ms\tMemory Size: 128 MB\t"
    "Max Memory Used: 74 MB\tInit Duration: 166.62 ms\tXRAY TraceId: 1-5d9d007f-0a8c7fd02xmpl480aed55ef0\t"
    "SegmentId: 3d752xmpl1bbe37e\tSampled: true"
)
NODE_TEXT_SUCCESS = Sample(
    "recorded: awsdocs/aws-lambda-developer-guide doc_source/nodejs-logging.md, 'Example log format'; one "
    "event per console call (src/LogPatch.js writes one frame each)",
    (
        NODE_START,
        f"2019-06-07T19:11:20.562Z\t{NODE_REQUEST}\tINFO\tENVIRONMENT VARIABLES\n{{\n"
        '  "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",\n'
        '  "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/my-function",\n'
        '  "AWS_LAMBDA_LOG_STREAM_NAME": "2019/06/07/[$LATEST]e6f4a0c4241adcd70c262d34c0bbc85c",\n'
        '  "AWS_EXECUTION_ENV": "AWS_Lambda_nodejs12.x",\n'
        '  "AWS_LAMBDA_FUNCTION_NAME": "my-function",\n'
        '  "PATH": "/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin",\n'
        '  "NODE_PATH": "/opt/nodejs/node10/node_modules:/opt/nodejs/node_modules:'
        '/var/runtime/node_modules",\n'
        "  ...\n}",
        f'2019-06-07T19:11:20.563Z\t{NODE_REQUEST}\tINFO\tEVENT\n{{\n  "key": "value"\n}}',
        f"2019-06-07T19:11:20.564Z\t{NODE_REQUEST}\tWARN\tEvent not processed.",
        NODE_END,
        NODE_REPORT,
    ),
)

PYTHON_TEXT_CODE_ERROR = Sample(
    "recorded: github.com/wazuh/wazuh-indexer/issues/239 (cut where the stored copy ends, inside the "
    "traceback): the function logs an AccessDenied itself, then fails on an IndexError",
    (
        "START RequestId: 2a5345ff-6116-422d-a858-713b9216cc86 Version: $LATEST",
        "[ERROR]\t2024-05-28T12:15:23.482Z\t2a5345ff-6116-422d-a858-713b9216cc86\tFailed to read S3 object "
        "sample.txt from bucket wazuh-aws-security-lake-raw: An error occurred (AccessDenied) when "
        "calling the "
        "GetObject operation: Access Denied",
        "LAMBDA_WARNING: Unhandled exception. The most likely cause is an issue in the function "
        "code. However, "
        "in rare cases, a Lambda runtime update can cause unexpected function behavior. For functions using "
        "managed runtimes, runtime updates can be triggered by a function change, or can be applied "
        "automatically. To determine if the runtime has been updated, check the runtime version in the "
        "INIT_START log entry. If this error correlates with a change in the runtime version, you "
        "may be able "
        "to mitigate this error by temporarily rolling back to the previous runtime version. For more "
        "information, see https://docs.aws.amazon.com/lambda/latest/dg/runtimes-update.html",
        "[ERROR] IndexError: list index out of range\nTraceback (most recent call last):\n"
        '  File "/var/task/lambda_function.py", line 170, in lambda_handler\n    parquet_key = get_full',
    ),
)

PYTHON_TEXT_BOTO3_DENIED = Sample(
    "recorded: github.com/DataDog/datadog-serverless-functions/issues/520 (the first of the two copies the "
    "issue shows; its copy lost the record's line breaks)",
    (
        "[ERROR] ClientError: An error occurred (AccessDenied) when calling the GetObject operation: Access "
        'DeniedTraceback (most recent call last):  File "/var/task/datadog_lambda/wrapper.py", line 124, in '
        "__call__    self.response = self.func(event, context, **kwargs)  File "
        '"/var/task/lambda_function.py", '
        "line 91, in datadog_forwarder    metrics, logs, trace_payloads = "
        "split(transform(enrich(parse(event, "
        'context))))  File "/var/task/parsing.py", line 90, in parse    return normalize_events(events, '
        'metadata)  File "/var/task/parsing.py", line 599, in normalize_events    for event in events:  File '
        '"/var/task/parsing.py", line 180, in s3_handler    response = s3.get_object(Bucket=bucket, '
        "Key=key)  "
        'File "/var/runtime/botocore/client.py", line 386, in _api_call    return '
        'self._make_api_call(operation_name, kwargs)  File "/var/runtime/botocore/client.py", line 705, in '
        "_make_api_call    raise error_class(parsed_response, operation_name)",
    ),
)

PYTHON_RECORD_VARIANTS = {
    # rendered: aws-lambda-python-runtime-interface-client awslambdaric/bootstrap.py ``log_error`` (text); the
    # expected outputs of tests/test_bootstrap.py, test_handle_event_request_fault_exception_logging*
    # (indentation: NO-BREAK SPACE, lines joined by "\r" on stdout)
    "type and message": "[ERROR] FaultExceptionType: Fault exception msg\rTraceback (most recent "
    "call last):\r"
    '\u00a0\u00a0File "spam.py", line 3, in <module>\r\u00a0\u00a0\u00a0\u00a0spam.eggs()\r'
    '\u00a0\u00a0File "eggs.py", line 42, in eggs\r\u00a0\u00a0\u00a0\u00a0return "bacon"\n',
    "type, no message": "[ERROR] FaultExceptionType\rTraceback (most recent call last):\n",
    "message, no type": "[ERROR] Fault exception msg\rTraceback (most recent call last):\n",
    "neither": '[ERROR]\rTraceback (most recent call last):\r\u00a0\u00a0File "spam.py", line 3, in '
    "<module>\r"
    '\u00a0\u00a0\u00a0\u00a0spam.eggs()\r\u00a0\u00a0File "eggs.py", line 42, in eggs\r'
    '\u00a0\u00a0\u00a0\u00a0return "bacon"\n',
    # recorded: github.com/aws-samples/aws-health-aware/issues/112, an init failure
    "init import error": "[ERROR] Runtime.ImportModuleError: Unable to import module 'handler': No module "
    "named 'handler'",
}

INIT_ERROR_EXIT = Sample(
    "recorded: github.com/cargo-lambda/cargo-lambda/issues/572 (an OS-only runtime whose init fails; the "
    "reporter masked the request id as '123')",
    (
        "Not Available",
        "INIT_REPORT Init Duration: 206.72 ms\tPhase: init\tStatus: error\tError Type: Runtime.ExitError",
        "Not Available",
        "INIT_REPORT Init Duration: 1666.62 ms\tPhase: invoke\tStatus: error\tError Type: Runtime.ExitError",
        "START RequestId: 123 Version: $LATEST",
        "RequestId: 123 Error: Runtime exited without providing a reason",
        "Runtime.ExitError",
        "END RequestId: 123",
        "REPORT RequestId: 123\tDuration: 1687.96 ms\tBilled Duration: 1688 ms\tMemory Size: 128 MB\tMax "
        "Memory Used: 16 MB",
    ),
)

TIMEOUT_REPORT_STATUS = Sample(
    "recorded: github.com/DataBiosphere/azul/issues/8140 (a timeout today: the REPORT states it, no 'Task "
    "timed out' line)",
    (
        "REPORT RequestId: 4725a167-21a7-5731-99c2-c3d0e3dfd770\tDuration: 180000.00 ms\tBilled Duration: "
        "180000 ms\tMemory Size: 1280 MB\tMax Memory Used: 1201 MB\tStatus: timeout\n",
    ),
)

TIMEOUT_LINE = Sample(
    "recorded: github.com/awslabs/aws-lambda-redshift-loader/issues/80 (an older runtime: the timeout line "
    "after the REPORT)",
    (
        "START RequestId: b47cde10-029a-11e6-b5d6-1f01b70b94b2 Version: $LATEST ",
        "END RequestId: b47cde10-029a-11e6-b5d6-1f01b70b94b2 ",
        "REPORT RequestId: b47cde10-029a-11e6-b5d6-1f01b70b94b2  Duration: 120000.64 ms  Billed Duration: "
        "120000 ms Memory Size: 128 MB  Max Memory Used: 23 MB  ",
        "2016-04-14T23:52:45.715Z b47cde10-029a-11e6-b5d6-1f01b70b94b2 Task timed out after 120.00 seconds ",
    ),
)

PROCESS_EXITED = Sample(
    "recorded: github.com/cboscolo/elb2loggly/issues/26 (a Node.js 6 function; the runtime exit after the "
    "REPORT)",
    (
        "START RequestId: 7a111162-fe11-4eee-a5f8-0651a0691b8f Version: $LATEST",
        "2019-02-15T12:01:38.743Z\t7a111162-fe11-4eee-a5f8-0651a0691b8f\tTypeError: Cannot read property '0' "
        "of undefined\n    at exports.handler (/var/task/index.js:9:33)",
        "END RequestId: 7a111162-fe11-4eee-a5f8-0651a0691b8f",
        "REPORT RequestId: 7a111162-fe11-4eee-a5f8-0651a0691b8f\tDuration: 54.30 ms\tBilled Duration: 100 ms "
        "\tMemory Size: 128 MB\tMax Memory Used: 29 MB\t",
        "RequestId: 7a111162-fe11-4eee-a5f8-0651a0691b8f Process exited before completing request",
    ),
)

RUNTIME_EXIT_REQUEST = "6d68ca91-49c9-448d-89b8-7ca3e6dc66aa"
RUNTIME_EXIT = Sample(
    "rendered: aws-lambda-runtime-interface-emulator internal/lambda/rie/handlers.go (START, END, REPORT), "
    "internal/lambda/interop/events_api.go FaultData.String ('RequestId: %s Error: %s\\n%s\\n') with "
    "internal/lambda/rapid/handlers.go's 'Runtime exited with error: %s' and fatalerror.RuntimeExit; the "
    "termination 'signal: killed' as github.com/praetorian-inc/chariot-ui/issues/166 records it",
    (
        f"START RequestId: {RUNTIME_EXIT_REQUEST} Version: $LATEST",
        f"RequestId: {RUNTIME_EXIT_REQUEST} Error: Runtime exited with error: signal: "
        f"killed\nRuntime.ExitError\n",
        f"END RequestId: {RUNTIME_EXIT_REQUEST}",
        f"REPORT RequestId: {RUNTIME_EXIT_REQUEST}\tDuration: 693.92 ms\tBilled Duration: 694 ms\tMemory "
        "Size: 128 MB\tMax Memory Used: 128 MB\t",
    ),
)

# The error object of github.com/aws/aws-sdk-js-v3/issues/2778 (an AccessDenied of the S3 client), its
# stack as far as the stored copy is whole.
SDK_V3_DENIED = {
    "errorType": "AccessDenied",
    "errorMessage": "Access Denied",
    "Code": "AccessDenied",
    "name": "AccessDenied",
    "$fault": "client",
    "$metadata": {"httpStatusCode": 403, "attempts": 1, "totalRetryDelay": 0},
    "stack": [
        "AccessDenied: Access Denied",
        "    at null.deserializeAws_restXmlPutObjectTaggingCommandError "
        "(/node_modules/@aws-sdk/client-s3/protocols/Aws_restXml.ts:9518:39)",
        "    at processTicksAndRejections (internal/process/task_queues.js:95:5)",
        "    at null.<anonymous> "
        "(/node_modules/@aws-sdk/client-s3/node_modules/@aws-sdk/middleware-serde/src/"
        "deserializerMiddleware.ts:20:18)",
        "    at null.<anonymous> "
        "(/node_modules/@aws-sdk/client-s3/node_modules/@aws-sdk/middleware-signing/src/"
        "middleware.ts:26:22)",
        "    at tye.retry (/node_modules/@aws-sdk/client-s3/node_modules/@aws-sdk/middleware-retry/src/"
        "defaultStrategy.ts:125:38)",
    ],
}
NODE_TEXT_SDK_DENIED = Sample(
    "rendered: Node.js runtime client src/LogPatch.js + src/Errors.js ('Invoke Error'), error object from "
    "github.com/aws/aws-sdk-js-v3/issues/2778, envelope from doc_source/nodejs-logging.md",
    (
        NODE_START,
        _node_record("2019-06-07T19:11:20.564Z", NODE_REQUEST, "Invoke Error", SDK_V3_DENIED),
        NODE_END,
        NODE_REPORT,
    ),
)

# The error of github.com/alexcasalboni/aws-lambda-power-tuning/pull/247: a Node.js function's own Error,
# its stack ("trace" in the invocation response) as Errors.js logs it ("stack").
OWN_CODE_ERROR = {
    "errorType": "Error",
    "errorMessage": 'Invocation error (running in series) with payload "null" - original error type: '
    '"Exception", original error message: "Exception raised during execution.", trace: "  File '
    '"/var/task/lambda_function.py", line 9, in lambda_handler\n    raise Exception("Exception raised during '
    'execution.")\n"',
    "stack": [
        'Error: Invocation error (running in series) with payload "null" - original error type: "Exception", '
        'original error message: "Exception raised during execution.", trace: "  File '
        '"/var/task/lambda_function.py", line 9, in lambda_handler',
        '    raise Exception("Exception raised during execution.")',
        '"',
        "    at handleLambdaInvocationError (/var/task/executor.js:177:11)",
        "    at runInSeries (/var/task/executor.js:160:13)",
        "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
        "    at async module.exports.handler (/var/task/executor.js:66:19)",
    ],
}
NODE_TEXT_CODE_ERROR = Sample(
    "rendered: Node.js runtime client src/LogPatch.js + src/Errors.js ('Invoke Error'), the error of "
    "github.com/alexcasalboni/aws-lambda-power-tuning/pull/247, envelope from doc_source/nodejs-logging.md",
    (
        NODE_START,
        _node_record("2019-06-07T19:11:20.564Z", NODE_REQUEST, "Invoke Error", OWN_CODE_ERROR),
        NODE_END,
        NODE_REPORT,
    ),
)

# The init failure of github.com/Signiant/PaperWatch/issues/6 (its stack as far as the stored copy is whole),
# logged by src/index.mjs's uncaughtException handler before any invocation: the request id is "undefined".
IMPORT_ERROR = {
    "errorType": "Runtime.ImportModuleError",
    "errorMessage": "Error: Cannot find module 'lambda'",
    "stack": [
        "Runtime.ImportModuleError: Error: Cannot find module 'lambda'",
        "    at _loadUserApp (/var/runtime/UserFunction.js:100:13)",
        "    at Object.module.exports.load (/var/runtime/UserFunction.js:140:17)",
        "    at Object.<anonymous> (/var/runtime/index.js:45:30)",
        "    at Module._compile (internal/modules/cjs/loader.js:778:30)",
        "    at Object.Module._extensions..js (internal/modules/cjs/loader.js:789:10)",
    ],
}
NODE_TEXT_INIT_ERROR = Sample(
    "rendered: Node.js runtime client src/index.mjs ('Uncaught Exception') with src/LogPatch.js, the "
    "error of "
    "github.com/Signiant/PaperWatch/issues/6; envelope from doc_source/nodejs-logging.md",
    (
        _node_record("2019-06-07T19:11:20.100Z", "undefined", "Uncaught Exception", IMPORT_ERROR),
        NODE_START,
        NODE_END,
        NODE_REPORT,
    ),
)

# ---------------------------------------------------------------------- other runtimes' terminal records

JAVA_TEXT_RECORD = (
    # rendered: aws-lambda-java-libs aws-lambda-java-runtime-interface-client .../api/client/UserFault.java
    # ``reportableError`` ("%s: %s\n%s\n": message, exception class, printStackTrace), logged as is
    # in the text
    # format (logging/TextLogFormatter.java, LogLevel.UNDEFINED); the exception of
    # doc_source/java-exceptions.md
    "/ by zero: java.lang.ArithmeticException\njava.lang.ArithmeticException: / by zero\n"
    "\tat example.HandlerDivide.handleRequest(HandlerDivide.java:28)\n"
    "\tat example.HandlerDivide.handleRequest(HandlerDivide.java:13)\n\n"
)
JAVA_SDK_MESSAGE = (
    # recorded: github.com/aws/aws-sdk-java/issues/1880 (the AWS SDK for Java v1's AmazonS3Exception message)
    "Access Denied (Service: Amazon S3; Status Code: 403; Error Code: AccessDenied; Request ID: "
    "88F9CA1673278356; S3 Extended Request ID: "
    "FkDmV60Ngc9wnjzyG9of/9bTVxsRQL7TtyIiPFJv2FyYIISTeM8Vz1BQIqmF3VpRB5"
    "kx03wl+mI=)"
)
JAVA_TEXT_SDK_RECORD = (
    # rendered: UserFault.reportableError as above, the exception of github.com/aws/aws-sdk-java/issues/1880
    f"{JAVA_SDK_MESSAGE}: com.amazonaws.services.s3.model.AmazonS3Exception\n"
    f"com.amazonaws.services.s3.model.AmazonS3Exception: {JAVA_SDK_MESSAGE}\n\n"
)
JAVA_JSON_RECORD = _json(
    # rendered: logging/JsonLogFormatter.java (StructuredLogMessage: timestamp, message, level, AWSRequestId)
    {
        "timestamp": "2019-06-07T19:11:20.564Z",
        "message": JAVA_TEXT_RECORD,
        "level": "ERROR",
        "AWSRequestId": NODE_REQUEST,
    }
)
DOTNET_TEXT_RECORD = (
    # rendered: aws-lambda-dotnet Libraries/src/Amazon.Lambda.RuntimeSupport Bootstrap/LambdaBootstrap.cs
    # ``WriteUnhandledExceptionToLog`` with Helpers/Logging/DefaultLogMessageFormatter.cs (time, request id,
    # "fail", Exception.ToString()); the exception of doc_source/csharp-exceptions.md
    f"2019-06-07T19:11:20.564Z\t{NODE_REQUEST}\tfail\tSystem.ArithmeticException: Sorry, 2 + 2 = 5\n"
    "   at LambdaExceptionTestFunction.ThrowExceptionInConstructor..ctor()"
)
RUBY_HEADER = (
    "Error raised from handler method"  # aws-lambda-ruby-runtime-interface-client lib/aws_lambda_ric.rb
)
RUBY_RECORD = (
    # recorded: doc_source/ruby-exceptions.md (JSON.pretty_unparse, as lib/aws_lambda_ric/lambda_logger.rb
    # ``log_error`` puts it after the header)
    '{\n  "errorMessage": "no implicit conversion of String into Integer",\n'
    '  "errorType": "Function<TypeError>",\n'
    '  "stackTrace": [\n    "/var/task/function.rb:3:in `first\'",\n    "/var/task/function.rb:3:in '
    "`handler'\"\n"
    "  ]\n}"
)
GO_RECORD = (
    # rendered: aws-lambda-go lambda/invoke_loop.go ``reportFailure`` (log.Printf of the error payload, the
    # standard log prefix); the payload of doc_source/golang-exceptions.md
    '2018/02/17 19:12:45 {"errorMessage":"something went wrong!","errorType":"errorString"}'
)
GO_SDK_V1_RECORD = (
    # rendered as GO_RECORD; the payload recorded in github.com/nzoschke/gofaas/pull/5 (AWS SDK for Go v1)
    '2018/02/17 19:12:45 {"errorMessage":"AccessDenied: Access Denied\\n\\tstatus code: 403, request id: '
    "1CD22FBD05A07230, host id: "
    '0DgsO7WgSuZQMilmgZ0Vpq/Fvn5hw3/NN89E/6b89WcJjhJGvi0onhSD1YPXlX8Z76JGSZ9HArw=",'
    '"errorType":"requestFailure"}'
)
GO_SDK_V2_MESSAGE = (
    # recorded: github.com/elastic/apm-aws-lambda/issues/526 (the AWS SDK for Go v2's error text)
    "operation error CloudWatch Logs: CreateLogGroup, https response error StatusCode: 400, RequestID: "
    "1be16b55-ea41-4bea-903d-5878767700a7, api error AccessDeniedException: User: "
    "arn:aws:sts::697149045717:assumed-role/gha-55ef6f9ad3e07084a079d653f88b25e629e0812c646a890bd344605-role/"
    "GitHubActions is not authorized to perform: logs:CreateLogGroup on resource: "
    "arn:aws:logs:eu-central-1:697149045717:log-group:/aws/lambda/github-actions-smoke-testing-test:"
    "log-stream: "
    "because no identity-based policy allows the logs:CreateLogGroup action"
)
GO_SDK_V2_RECORD = (
    # rendered as GO_RECORD: aws-lambda-go lambda/errors.go names the error type by its Go type
    # (*smithy.OperationError)
    "2018/02/17 19:12:45 " + _json({"errorMessage": GO_SDK_V2_MESSAGE, "errorType": "OperationError"})
)
GO_JSON_RECORD = _json(
    # rendered: in the JSON format Lambda gives a line without a level the level INFO and a timestamp
    # (docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html); the line is GO_RECORD
    {
        "timestamp": "2018-02-17T19:12:45.000Z",
        "level": "INFO",
        "requestId": NODE_REQUEST,
        "message": GO_RECORD,
    }
)

# --------------------------------------------------------------------------------------------- JSON format

JSON_REQUEST = "6d68ca91-49c9-448d-89b8-7ca3e6dc66aa"
INIT_START = _json(
    # recorded: docs.aws.amazon.com/lambda/latest/dg/telemetry-schema-reference.html, platform.initStart
    {
        "time": "2022-10-12T00:00:15.064Z",
        "type": "platform.initStart",
        "record": {
            "initializationType": "on-demand",
            "phase": "init",
            "runtimeVersion": "nodejs-14.v3",
            "runtimeVersionArn": "arn",
            "functionName": "myFunction",
            "functionVersion": "$LATEST",
            "instanceId": "82561ce0-53dd-47d1-90e0-c8f5e063e62e",
            "instanceMaxMemory": 256,
        },
    }
)
PLATFORM_START = _json(
    # recorded: telemetry-schema-reference.html, platform.start
    {
        "time": "2022-10-12T00:00:15.064Z",
        "type": "platform.start",
        "record": {
            "requestId": JSON_REQUEST,
            "version": "$LATEST",
            "tracing": {
                "spanId": "54565fb41ac79632",
                "type": "X-Amzn-Trace-Id",
                "value": "Root=1-62e900b2-710d76f009d6e7785905449a;Parent=0efbd19962d95b05;Sampled=1",
            },
        },
    }
)


def runtime_done(status: str, error_type: str | None = None) -> str:
    """telemetry-schema-reference.html's platform.runtimeDone; ``status``/``errorType`` as
    aws-lambda-runtime-interface-emulator internal/lambda/rapid/handlers.go ``handleReset`` sets them."""
    record: dict[str, Any] = {"requestId": JSON_REQUEST, "status": status}
    record |= {"errorType": error_type} if error_type else {}
    record["metrics"] = {"durationMs": 140.0, "producedBytes": 16}
    return _json({"time": "2022-10-12T00:01:15.000Z", "type": "platform.runtimeDone", "record": record})


def platform_report(status: str | None, error_type: str | None = None, request: str = JSON_REQUEST) -> str:
    """telemetry-schema-reference.html's platform.report (its printed example's trailing comma dropped), with
    ``status`` and ``errorType`` as internal/lambda/interop/events_api.go ``ReportData`` carries them."""
    record: dict[str, Any] = {
        "metrics": {
            "billedDurationMs": 694,
            "durationMs": 693.92,
            "initDurationMs": 397.68,
            "maxMemoryUsedMB": 84,
            "memorySizeMB": 128,
        },
        "requestId": request,
    }
    record |= {"status": status} if status else {}
    record |= {"errorType": error_type} if error_type else {}
    return _json({"time": "2022-10-12T00:01:15.000Z", "type": "platform.report", "record": record})


FUNCTION_JSON_LINE = _json(
    # recorded: telemetry-schema-reference.html, the record of a 'function' event in the JSON format
    {
        "timestamp": "2022-10-12T00:03:50.000Z",
        "level": "INFO",
        "requestId": "79b4f56e-95b1-4643-9700-2807f4e68189",
        "message": "Hello world, I am a function!",
    }
)
JSON_SUCCESS = Sample(
    "recorded: telemetry-schema-reference.html (platform.initStart, platform.start, a function record, "
    "platform.runtimeDone, platform.report)",
    (INIT_START, PLATFORM_START, FUNCTION_JSON_LINE, runtime_done("success"), platform_report(None)),
)

PYTHON_JSON_ERROR = _json(
    # rendered: awslambdaric/bootstrap.py ``log_error`` in the JSON format (timestamp, log_level, make_error's
    # errorMessage, errorType, requestId, stackTrace of traceback.format_list); the error recorded in
    # github.com/awslabs/amazon-inspector-agent-autodeploy/issues/2
    {
        "timestamp": "2022-10-12T00:01:14Z",
        "log_level": "ERROR",
        "errorMessage": "list index out of range",
        "errorType": "IndexError",
        "requestId": JSON_REQUEST,
        "stackTrace": [
            '  File "/var/task/index.py", line 53, in lambda_handler\n'
            "    instanceInfo = response['InstanceInformationList'][0]\n"
        ],
    }
)
PYTHON_JSON_BOTO3 = _json(
    # rendered as PYTHON_JSON_ERROR; the ClientError recorded in
    # github.com/aws-samples/aws-rds-snapshot-management/issues/6 (its frames as
    # traceback.format_list writes them)
    {
        "timestamp": "2022-10-12T00:01:14Z",
        "log_level": "ERROR",
        "errorMessage": "An error occurred (AccessDenied) when calling the GetObject operation: "
        "Access Denied",
        "errorType": "ClientError",
        "requestId": JSON_REQUEST,
        "stackTrace": [
            '  File "/var/task/lambda_function.py", line 52, in lambda_handler\n'
            "    obj = s3.get_object(Bucket = BUCKET, Key = KEY)\n",
            '  File "/var/runtime/botocore/client.py", line 316, in _api_call\n'
            "    return self._make_api_call(operation_name, kwargs)\n",
            '  File "/var/runtime/botocore/client.py", line 635, in _make_api_call\n'
            "    raise error_class(parsed_response, operation_name)\n",
        ],
    }
)
PYTHON_JSON_INIT_ERROR = _json(
    # rendered as PYTHON_JSON_ERROR for the init phase (no request id: make_error writes ""); the error of
    # PYTHON_RECORD_VARIANTS["init import error"]
    {
        "timestamp": "2022-10-12T00:00:15Z",
        "log_level": "ERROR",
        "errorMessage": "Unable to import module 'handler': No module named 'handler'",
        "errorType": "Runtime.ImportModuleError",
        "requestId": "",
        "stackTrace": [],
    }
)
INIT_REPORT_ERROR = _json(
    # rendered: telemetry-schema-reference.html's platform.initReport with the errorType and error status its
    # schema allows (PlatformInitReport.errorType, Status)
    {
        "time": "2022-10-12T00:01:15.000Z",
        "type": "platform.initReport",
        "record": {
            "initializationType": "on-demand",
            "phase": "init",
            "status": "error",
            "errorType": "Runtime.ImportModuleError",
            "metrics": {"durationMs": 125.33},
        },
    }
)
NODE_JSON_ERROR = _json(
    # rendered: Node.js runtime client src/LogPatch.js ``formatJsonMessage`` / ``jsonErrorReplacer`` (the
    # record asserted in test/unit/LogPatchTest.js, "structuredConsole.logError() output should not be
    # stringified in JSON mode"); the error of OWN_CODE_ERROR, its stack split as stackTrace
    {
        "timestamp": "2022-10-12T00:01:14.000Z",
        "level": "ERROR",
        "requestId": JSON_REQUEST,
        "message": {
            "errorType": "Error",
            "errorMessage": OWN_CODE_ERROR["errorMessage"],
            "stackTrace": OWN_CODE_ERROR["stack"],
        },
    }
)

# ------------------------------------------------------------------------------------------------- hostile
# What a function can print: Lambda passes JSON output through unchanged, and text as it is.

FORGED_REPORT_OWN = platform_report("error", "Runtime.ExitError").replace(
    '"maxMemoryUsedMB":84', '"maxMemoryUsedMB":128'
)
FORGED_REQUEST = "deadbeef-0000-4000-8000-000000000001"
FORGED_REPORT_OTHER = platform_report("timeout", request=FORGED_REQUEST)
FORGED_START = PLATFORM_START.replace(JSON_REQUEST, FORGED_REQUEST)
FORGED_PYTHON_ERROR = PYTHON_JSON_BOTO3
FORGED_INIT_REPORT = INIT_REPORT_ERROR
FORGED_TEXT_REPORT = NODE_REPORT.replace("Max Memory Used: 74 MB", "Max Memory Used: 128 MB")
FORGED_TEXT_START = f"START RequestId: {FORGED_REQUEST} Version: $LATEST"
