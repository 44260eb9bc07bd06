"""Fault injectors with exact restore: IAM, concurrency, network egress, and hostile log lines."""
