"""Fails incidents stuck in INVESTIGATING."""
