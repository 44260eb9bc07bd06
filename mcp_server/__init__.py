"""Read-only MCP server exposing the diagnostic tools for failing AWS Lambda functions."""
