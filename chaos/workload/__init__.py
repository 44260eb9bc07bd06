"""The sandbox workload (`data-processor`) and the local Lambda runtime that runs it."""
