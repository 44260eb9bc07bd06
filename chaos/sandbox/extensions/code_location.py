"""Lambda ``GetFunction``'s ``Code.Location``: a URL on the emulator that serves the version's package.

moto (``awslambda/models.py``) keeps each version's package in ``LambdaFunction.code_bytes``:
``PublishVersion`` stores a shallow copy of ``$LATEST`` whose ``code_bytes`` keeps the old package when
``UpdateFunctionCode`` rebinds ``$LATEST``'s. But ``LambdaFunction.get_code`` points ``Code.Location`` at
an S3 host that nothing serves. We wrap ``get_code`` to point it here instead, signed like a presigned
URL: an HMAC (key random per emulator process) over the version and its ``CodeSha256``. The URL serves
exactly that package and is refused (403) once the version's code has changed, as a stale URL would be.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote
from wsgiref.types import StartResponse, WSGIEnvironment

from moto.awslambda.exceptions import UnknownFunctionException
from moto.awslambda.models import LambdaFunction, lambda_backends
from werkzeug.wrappers import Request, Response

from chaos.sandbox.extensions import server_app

PREFIX = "/_sandbox/lambda-code/"
_KEY = secrets.token_bytes(32)


def install(base_url: str) -> None:
    original_get_code = LambdaFunction.get_code

    def get_code(self: LambdaFunction) -> dict[str, Any]:
        response: dict[str, Any] = original_get_code(self)
        code = response.get("Code", {})
        if code.get("RepositoryType") == "S3":
            path = "/".join(quote(part, safe="") for part in _parts(self))
            code["Location"] = f"{base_url}{PREFIX}{path}?Signature={_signature(self)}"
        return response

    setattr(LambdaFunction, "get_code", get_code)  # noqa: B010
    server_app.mount(PREFIX, _serve)


def _parts(function: LambdaFunction) -> tuple[str, str, str, str]:
    return function.account_id, function.region, function.function_name, str(function.version)


def _signature(function: LambdaFunction) -> str:
    message = "\n".join((*_parts(function), function.code_sha_256)).encode()
    return hmac.new(_KEY, message, hashlib.sha256).hexdigest()


def _error(status: int, code: str, message: str) -> Response:
    body = f"<?xml version='1.0' encoding='UTF-8'?>\n<Error><Code>{code}</Code><Message>{message}</Message>"
    body += "</Error>\n"
    return Response(body, status=status, content_type="application/xml")


def _find(account: str, region: str, name: str, version: str) -> LambdaFunction | None:
    if account not in lambda_backends or region not in lambda_backends[account]:
        return None
    try:
        function: LambdaFunction = lambda_backends[account][region].get_function(name, version)
    except UnknownFunctionException:
        return None
    return function


def _serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    request = Request(environ)
    parts = request.path.removeprefix(PREFIX).split("/")
    if request.method != "GET":
        response = _error(403, "AccessDenied", "Only GET is allowed on a code location.")
    elif len(parts) != 4 or (function := _find(*parts)) is None:
        response = _error(404, "NoSuchKey", "The specified key does not exist.")
    elif not hmac.compare_digest(request.args.get("Signature", ""), _signature(function)):
        response = _error(403, "AccessDenied", "The signature does not match or the code has changed.")
    else:
        response = Response(function.code_bytes, status=200, content_type="application/zip")
    return response(environ, start_response)
