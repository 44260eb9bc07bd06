"""Fault injectors, the embedded AWS sandbox and the end-to-end drill."""
