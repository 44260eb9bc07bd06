"""Recorded and rendered samples the tests read; each names its source."""
