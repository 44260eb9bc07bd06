"""The environment variables through which the sandbox configures its emulator process."""

UNPATCHED_ENV = "INCIDENT_SANDBOX_UNPATCHED"  # tests only: run moto exactly as released
ALARM_INTERVAL_ENV = "INCIDENT_SANDBOX_ALARM_INTERVAL_SECONDS"  # how often alarms are evaluated
TIME_SCALE_ENV = "INCIDENT_SANDBOX_TIME_SCALE"  # how many times faster than AWS the sandbox's clocks run
# CloudTrail LookupEvents: "limited to two per second, per account, per Region"
# (https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html), times the time scale.
LOOKUPS_PER_SECOND = 2.0
# A fixed CloudTrail delivery delay in seconds instead of the draw (0: at once).
CLOUDTRAIL_DELAY_ENV = "INCIDENT_SANDBOX_CLOUDTRAIL_DELAY_SECONDS"
# CloudTrail "typically delivers logs within an average of about 5 minutes of an API call. This time is not
# guaranteed" (https://docs.aws.amazon.com/awscloudtrail/latest/userguide/how-cloudtrail-works.html): each
# event's delay is drawn uniformly from this range (mean 5 minutes), divided by the time scale.
DELIVERY_DELAY_SECONDS = (60.0, 540.0)
AWS_DELAYS = "aws"  # the body of POST /_sandbox/cloudtrail/delivery-delay that puts the draw back
