"""The diagnostic tools' logic as plain functions: boto3 clients and a validated arguments model in, a
contract response model out. One module per tool family; the MCP server only wires them up."""
