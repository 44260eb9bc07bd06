"""Asynchronous invocation, accepted as Lambda accepts it and queued in the emulator, never run by moto.

moto 5.2.5 runs an ``Invoke`` with ``InvocationType=Event``, and every SNS delivery to a ``lambda``
subscription, in Docker. The sandbox's Lambda service runs on the client side instead
(``chaos/workload/async_invocation.py``), so the emulator only does what the Lambda front end does:
- ``Invoke`` with ``X-Amz-Invocation-Type: Event``: after moto's IAM check of the caller, the function (and
  qualifier) must exist (moto's ``ResourceNotFoundException``, ``Function not found: <ARN>``, AWS's
  wording), then the event is queued and the answer is HTTP 202 with an empty body
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html);
- SNS deliveries (``sns_lambda.py``) queue their event here too.

moto authorizes ``Invoke`` as ``lambda:Invoke``; the IAM action is ``lambda:InvokeFunction``
(https://docs.aws.amazon.com/lambda/latest/dg/permissions-function-services.html), so a caller whose
policy grants it, as every real policy does, would be refused. We authorize ``lambda:InvokeFunction``
(against the function's ARN: ``lambda_resources``).

``POST /_sandbox/lambda/async-events`` answers the queued events as JSON and empties the queue. Each is
``{id, account, region, function_arn (qualified when the caller named a qualifier), qualifier, payload (the
request body as sent), received_ms (epoch ms), source ("invoke" or the topic ARN)}``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote
from wsgiref.types import StartResponse, WSGIEnvironment

from moto.awslambda.models import LambdaFunction
from moto.awslambda.responses import LambdaResponse
from moto.iam import access_control
from werkzeug.wrappers import Request, Response

from chaos.sandbox.extensions import server_app

EVENTS_PATH = "/_sandbox/lambda/async-events"

_lock = threading.Lock()
_queue: list[dict[str, Any]] = []


def enqueue(
    function: LambdaFunction, qualifier: str | None, payload: str, source: str, *, account: str, region: str
) -> dict[str, Any]:
    """Queue one event for ``function`` (``qualifier`` as the caller named it, if any)."""
    unqualified = ":".join(function.function_arn.split(":")[:7])
    event = {
        "id": str(uuid.uuid4()),
        "account": account,
        "region": region,
        "function_arn": f"{unqualified}:{qualifier}" if qualifier else unqualified,
        "qualifier": qualifier,
        "payload": payload,
        "received_ms": int(time.time() * 1000),
        "source": source,
    }
    with _lock:
        _queue.append(event)
    return event


def take() -> list[dict[str, Any]]:
    """Every queued event, oldest first; the queue is empty afterwards."""
    with _lock:
        events, _queue[:] = list(_queue), []
    return events


def qualifier_of(name_or_arn: str, qualifier: str | None) -> str | None:
    """The qualifier a request names: in the ARN (``arn:...:function:name:qualifier``), after the name
    (``name:qualifier``), or as the ``Qualifier`` parameter."""
    parts = name_or_arn.split(":")
    if name_or_arn.startswith("arn:"):
        return parts[7] if len(parts) > 7 else qualifier
    return parts[1] if len(parts) > 1 else qualifier


def _serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if Request(environ).method != "POST":
        return Response("POST to take the queued events\n", status=405)(environ, start_response)
    body = json.dumps(take())
    return Response(body, status=200, content_type="application/json")(environ, start_response)


def install() -> None:
    original_invoke = LambdaResponse.invoke

    # Hooked at the response, not the backend: moto's ``invoke`` reads the qualifier from a ``qualifier``
    # parameter, but the SDKs send ``Qualifier``, so the backend never sees it.
    def invoke(self: LambdaResponse) -> Any:
        if self.headers.get("X-Amz-Invocation-Type") != "Event":
            return original_invoke(self)
        function_name = unquote(self.path.rsplit("/", 2)[-2])
        qualifier = self.querystring.get("Qualifier", [None])[0]
        function = self.backend.get_function(function_name, qualifier)  # ResourceNotFoundException
        named = qualifier_of(function_name, qualifier)
        payload = self.body.decode() if isinstance(self.body, bytes) else str(self.body or "")
        enqueue(function, named, payload, "invoke", account=self.current_account, region=self.region)
        return 202, {"status": "202", "Content-Length": "0"}, b""

    original_iam_init = access_control.IAMRequestBase.__init__

    def iam_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_iam_init(self, *args, **kwargs)
        if self._action == "lambda:Invoke":
            self._action = "lambda:InvokeFunction"

    setattr(LambdaResponse, "invoke", invoke)  # noqa: B010
    setattr(access_control.IAMRequestBase, "__init__", iam_init)  # noqa: B010
    server_app.mount(EVENTS_PATH, _serve)
