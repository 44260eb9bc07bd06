"""Deploying to a real AWS account: CloudFormation templates, Lambda bundles and the MCP server image."""
