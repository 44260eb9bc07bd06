"""The environment variables through which the sandbox configures its emulator process."""

UNPATCHED_ENV = "INCIDENT_SANDBOX_UNPATCHED"  # tests only: run moto exactly as released
ALARM_INTERVAL_ENV = "INCIDENT_SANDBOX_ALARM_INTERVAL_SECONDS"  # how often alarms are evaluated
TIME_SCALE_ENV = "INCIDENT_SANDBOX_TIME_SCALE"  # how many times faster than AWS the sandbox's clocks run
# CloudTrail LookupEvents: "limited to two per second, per account, per Region"
# (https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html), times the time scale.
LOOKUPS_PER_SECOND = 2.0
