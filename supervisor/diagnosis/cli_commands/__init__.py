"""Exact, copyable AWS CLI commands, built and checked against botocore's service models.

Remediation steps carry CLI commands that are shown, never run. `build_command` renders one from botocore
names and boto3-style parameters; `parse_command` reads one back, as any model may have written it, and
refuses with a reason whatever the CLI would refuse or a shell would read differently: an unknown service,
operation or argument, a missing required argument, a wrong type, a value below botocore's minimum, a
`file://` value, and unquoted shell syntax. The awscli package is not used (it pins botocore); the
models, `xform_name` and `validate_parameters` come from botocore, loaded on first use.
"""

from supervisor.diagnosis.cli_commands.build import build_command
from supervisor.diagnosis.cli_commands.parse import ParsedCommand, parse_command
from supervisor.diagnosis.cli_commands.service_model import CommandError

__all__ = ["CommandError", "ParsedCommand", "build_command", "parse_command"]
