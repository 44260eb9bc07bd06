"""incident-console: a small read-only web application over the incident tables."""
