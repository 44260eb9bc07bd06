"""The resource a Lambda request is authorized against, as AWS names it.

moto authorizes every Lambda request against the resource ``*``, so a grant scoped to a function's ARN
refuses everything, and a grant on ``*`` cannot be told from one scoped to the watched functions. AWS:
"Actions that operate on a function can be restricted to a specific function by function, version, or
alias ARN"; "Actions can be restricted to specific event source mapping resources by ARN"
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html). So here:

- a request on a function (a path ``/<api version>/functions/<name>/...``) is authorized against the
  function's ARN, qualified when the request names a version or alias (after the name, in the ARN, or as
  ``Qualifier``); an alias operation (``.../aliases/<alias>``) and publishing a version act on the function
  and are authorized against its unqualified ARN;
- a request on an event source mapping (``/<api version>/event-source-mappings/<UUID>``) against
  ``arn:aws:lambda:<region>:<account>:event-source-mapping:<UUID>``;
- anything else (listing, creating a mapping) against ``*``.

Not emulated: the ``lambda:FunctionArn`` condition key that scopes mapping actions by their function
(docs/limitations.md).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from moto.awslambda.responses import LambdaResponse

from chaos.sandbox.extensions.async_invoke import qualifier_of


def request_resource(path: str, qualifier: str | None, region: str, account: str) -> str:
    """The resource of a Lambda request to ``path`` (``qualifier``: its ``Qualifier`` parameter)."""
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    if len(parts) >= 3 and parts[1] == "event-source-mappings":
        return f"arn:aws:lambda:{region}:{account}:event-source-mapping:{parts[2]}"
    if len(parts) < 3 or parts[1] != "functions":
        return "*"
    name = parts[2]
    bare = name.split(":")[6] if name.startswith("arn:") else name.split(":")[0]
    owner = name.split(":")[4] if name.startswith("arn:") else account
    arn = f"arn:aws:lambda:{region}:{owner}:function:{bare}"
    if len(parts) > 3 and parts[3] in {"aliases", "versions"}:
        return arn
    named = qualifier_of(name, qualifier)
    return f"{arn}:{named}" if named else arn


def install() -> None:
    def resource(self: LambdaResponse) -> str:
        qualifier: Any = self.querystring.get("Qualifier", [None])[0]
        return request_resource(self.path, qualifier, self.region, self.current_account)

    setattr(LambdaResponse, "_determine_resource", resource)  # noqa: B010
