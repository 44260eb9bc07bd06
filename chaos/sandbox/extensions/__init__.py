"""What the emulator adds to moto, installed in the emulator process before its server starts."""

from __future__ import annotations


def install(base_url: str) -> None:
    """Install every extension; ``base_url`` is where the emulator serves."""
    # Imported here, not at the top: they import moto, which other users of this package need not load.
    from chaos.sandbox.extensions import (
        async_invoke,
        cloudtrail,
        cloudwatch_alarms,
        cloudwatch_reset,
        code_location,
        event_source_mappings,
        kms_key_states,
        lambda_async_config,
        lambda_kms,
        lambda_logging,
        lambda_policies,
        lambda_resources,
        lambda_revisions,
        lambda_storage,
        lambda_urls,
        lambda_vpc,
        log_filters,
        rest_apis,
        sns_lambda,
        sqs_metrics,
    )

    code_location.install(base_url)
    rest_apis.install()
    cloudtrail.install()
    cloudwatch_alarms.install()
    cloudwatch_reset.install()
    lambda_logging.install()
    lambda_async_config.install()
    lambda_kms.install()
    kms_key_states.install()
    lambda_storage.install()
    lambda_vpc.install()
    lambda_urls.install()
    lambda_policies.install()
    log_filters.install()
    event_source_mappings.install()
    sqs_metrics.install()
    async_invoke.install()
    lambda_resources.install()
    sns_lambda.install()
    lambda_revisions.install()  # last: every other extension's configuration and updates are revised
