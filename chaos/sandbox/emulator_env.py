"""The environment variables through which the sandbox configures its emulator process."""

UNPATCHED_ENV = "INCIDENT_SANDBOX_UNPATCHED"  # tests only: run moto exactly as released
ALARM_INTERVAL_ENV = "INCIDENT_SANDBOX_ALARM_INTERVAL_SECONDS"  # how often alarms are evaluated
