"""The Lambda service's pollers for stream event source mappings, Kinesis streams and DynamoDB table streams
(docs/sandbox.md, "Stream event sources").

``poll_once()`` lists the account's mappings (as ``lambda-service``) and, for each ``Enabled`` one on a
stream, reads every shard with the function's execution role and sends one batch per shard to the
function, synchronously, as Lambda does (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html:
"It processes one batch of records at a time from each shard"):

- A shard is read from the mapping's ``StartingPosition`` (``TRIM_HORIZON``: every record kept; ``LATEST``:
  the records that arrived after the mapping was made, as the emulator's poll view dates it), then after its
  checkpoint: the last record of the last batch that succeeded. A batch holds up to ``BatchSize`` records of
  one shard, in order.
- A function error retries the same batch, and every later record of the shard waits behind it, until the
  batch succeeds, its oldest record is older than ``MaximumRecordAgeInSeconds`` or it failed more than
  ``MaximumRetryAttempts`` times; -1 (the default of both) means never
  (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html: "a bad record can
  block processing on the affected shard for up to one week"). Records discarded that way are described
  to the ``OnFailure`` destination (an SQS queue or SNS topic: the invocation record of that page, with
  ``KinesisBatchInfo``, or ``DDBStreamBatchInfo`` for a table's stream), then the shard moves on.
- ``BisectBatchOnFunctionError`` splits a failed batch of two records or more in two, each half retried on
  its own, in order; "Splitting batches doesn't consume the retry quota" (same page).
- With ``ReportBatchItemFailures`` the response's ``batchItemFailures`` name sequence numbers; the records
  before the lowest one are done, and the batch is retried from it
  (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html).
- A throttled or refused invocation is retried without counting as an attempt (the same page's "Before
  invocation"), until the records are too old.
- Every batch sent publishes ``IteratorAge`` (``AWS/Lambda``, milliseconds): how long before the send its
  last record reached the stream (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).

A table stream is read through DynamoDB Streams, its event shaped as with-ddb.html shows it. Where Lambda
keeps its checkpoints, this poller keeps them in memory; a new poller starts every mapping
over from its ``StartingPosition``. Not emulated: ``ParallelizationFactor`` above 1, batching windows,
tumbling windows, filters, enhanced fan-out, resharding and the stream's retention (24 hours: no drill is
that long).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from chaos.workload.metrics import NAMESPACE, put_datapoints
from chaos.workload.runtime import Invocation, LocalLambdaRuntime, assumed_role_session
from chaos.workload.sqs_poller import (
    ACCESS_PROBLEM,
    FUNCTION_FAILED,
    OK,
    poll_view,
    report_result,
)

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=5, read_timeout=30)
_ROLE_SESSION_SECONDS = 600.0
_READ_LIMIT = 10000  # GetRecords' own maximum
RETRIES_EXHAUSTED = "RetryAttemptsExhausted"  # kinesis-on-failure-destination.html's example record
# AWS's pages show no record for an age limit; this is the condition other emulators write.
AGE_EXCEEDED = "MaximumRecordAgeExceeded"
_BEFORE_INVOCATION = ("throttled", "refused")
# With no new record and none waiting a poll sends nothing; this full poll only refreshes what a mapping
# reports (a role that lost its read permission), so it can be rarer than the SQS poller's.
FULL_POLL_SECONDS = 30.0


@dataclass
class Batch:
    """Records of one shard sent together, and how many times the function failed on them."""

    records: list[dict[str, Any]]
    attempts: int = 0
    last: Invocation | None = None


@dataclass
class Shard:
    """What the poller keeps of one shard of one mapping: its checkpoint and the batches waiting."""

    checkpoint: str | None  # the sequence number of the last record done; None: read from the first
    waiting: list[Batch] = field(default_factory=list)  # bisected halves, or the batch being retried


@dataclass(frozen=True)
class StreamOutcome:
    """What one batch of one shard did."""

    uuid: str
    shard_id: str
    sent: int
    done: int  # records the shard moved past: succeeded, or discarded to the on-failure destination
    discarded: int
    result: str


class StreamPoller:
    """``platform`` is the Lambda service's session (``lambda-service``); ``runtime`` runs the functions;
    ``clock`` what record ages are measured by (seconds since the epoch)."""

    def __init__(self, runtime: LocalLambdaRuntime, platform: boto3.Session, clock: Any = time.time) -> None:
        self._runtime = runtime
        self._clock = clock
        self._endpoint = str(platform.client("lambda").meta.endpoint_url).rstrip("/")
        self._roles: dict[str, tuple[float, boto3.Session]] = {}
        self._clients: dict[tuple[int, str], Any] = {}
        self._shards: dict[tuple[str, str], Shard] = {}  # (mapping UUID, shard id) → its progress
        self._last_full: tuple[float, dict[str, Any] | None] = (0.0, None)  # when, and the view then
        self._sent = False  # whether the last full poll sent a batch: the shards may hold more
        self._skipped: dict[tuple[str, str], float] = {}  # shards started again (skip_to_latest), and when
        self._lock = threading.Lock()  # one pass at a time; the stage's skip between passes

    def poll_once(self) -> list[StreamOutcome]:
        """One batch per shard of every enabled Kinesis mapping of every account; nothing when the last full
        poll is recent and sent nothing, no batch waits, and no mapping and no stream changed since."""
        with self._lock:
            return self._pass()

    def _pass(self) -> list[StreamOutcome]:
        view = poll_view(self._endpoint)
        if self._idle(view):
            return []
        outcomes: list[StreamOutcome] = []
        for platform in self._runtime.sessions():
            pages = self._client(platform, "lambda").get_paginator("list_event_source_mappings").paginate()
            for mapping in (m for page in pages for m in page.get("EventSourceMappings", [])):
                if mapping.get("State") == "Enabled" and _is_stream(str(mapping.get("EventSourceArn"))):
                    found = self._poll(platform, mapping, (view or {}).get("created") or {})
                    if found and found[-1].result != mapping.get("LastProcessingResult"):
                        report_result(self._endpoint, mapping["UUID"], found[-1].result)
                    outcomes += found
        self._last_full, self._sent = (time.monotonic(), view), any(o.sent for o in outcomes)
        return outcomes

    def skip_to_latest(self) -> None:
        """The stage's fresh start (never Lambda's): every shard read so far starts again after the records
        it holds now, as a mapping made now at ``LATEST`` would; what waited is not sent."""
        with self._lock:
            now = time.time()
            self._skipped |= dict.fromkeys(self._shards, now)
            self._shards.clear()

    def _idle(self, view: dict[str, Any] | None) -> bool:
        polled_at, last = self._last_full
        if view is None or last is None or self._sent or time.monotonic() - polled_at > FULL_POLL_SECONDS:
            return False
        unchanged = (view.get("mappings"), view.get("records")) == (last.get("mappings"), last.get("records"))
        return unchanged and not any(shard.waiting for shard in self._shards.values())

    def _client(self, session: boto3.Session, service: str) -> Any:
        key = (id(session), service)
        if key not in self._clients:
            self._clients[key] = session.client(service, config=_CLIENT_CONFIG)
        return self._clients[key]

    def _role(self, platform: boto3.Session, role_arn: str) -> boto3.Session:
        cached = self._roles.get(role_arn)
        if cached is None or time.monotonic() - cached[0] > _ROLE_SESSION_SECONDS:
            cached = (time.monotonic(), assumed_role_session(platform, role_arn, "stream-poller"))
            self._roles[role_arn] = cached
        return cached[1]

    def _poll(
        self, platform: boto3.Session, mapping: dict[str, Any], created: dict[str, float | None]
    ) -> list[StreamOutcome]:
        function_arn, stream_arn = mapping["FunctionArn"], mapping["EventSourceArn"]
        role_arn = self._client(platform, "lambda").get_function(FunctionName=function_arn)["Configuration"][
            "Role"
        ]
        role = self._role(platform, role_arn)
        source = _source(lambda service: self._client(role, service), stream_arn)
        outcomes = []
        try:
            for shard_id in source.shards():
                key = (mapping["UUID"], shard_id)
                if key not in self._shards:
                    latest = (
                        created.get(mapping["UUID"]) if mapping.get("StartingPosition") == "LATEST" else None
                    )
                    self._shards[key] = Shard(_start(source, shard_id, self._skipped.get(key, latest)))
                shard = self._shards[key]
                if not shard.waiting:
                    records = source.read(shard_id, shard.checkpoint, int(mapping.get("BatchSize") or 100))
                    if not records:
                        continue
                    shard.waiting.append(Batch(records))
                outcomes.append(self._send(platform, role, role_arn, mapping, source, shard_id, shard))
        except ClientError as error:
            if not _access_denied(error):
                raise
            return [StreamOutcome(mapping["UUID"], "", 0, 0, 0, ACCESS_PROBLEM)]
        return outcomes

    def _send(
        self,
        platform: boto3.Session,
        role: boto3.Session,
        role_arn: str,
        mapping: dict[str, Any],
        source: Source,
        shard_id: str,
        shard: Shard,
    ) -> StreamOutcome:
        """Send the shard's first waiting batch, and settle it as Lambda would."""
        batch, uuid_ = shard.waiting[0], mapping["UUID"]
        age_limit, now = int(mapping.get("MaximumRecordAgeInSeconds", -1)), self._clock()
        if age_limit != -1 and now - batch.records[0]["arrival"] > age_limit:
            discarded = self._discard(role, mapping, source, shard_id, shard, AGE_EXCEEDED)
            return StreamOutcome(uuid_, shard_id, 0, discarded, discarded, FUNCTION_FAILED)
        sent = len(batch.records)
        event = {"Records": [source.event_record(r, shard_id, role_arn) for r in batch.records]}
        parts = str(mapping["FunctionArn"]).split(":")
        invocation = self._runtime.invoke(":".join(parts[:7]), event, parts[7] if len(parts) > 7 else None)
        self._iterator_age(platform, parts[6], (now - batch.records[-1]["arrival"]) * 1000)
        batch.last = invocation
        if invocation.status in _BEFORE_INVOCATION:
            return StreamOutcome(uuid_, shard_id, sent, 0, 0, FUNCTION_FAILED)
        failed_from = _first_failure(invocation, batch.records, mapping)
        done, batch.records = batch.records[:failed_from], batch.records[failed_from:]
        if done:
            shard.checkpoint = done[-1]["SequenceNumber"]
        if not batch.records:
            shard.waiting.pop(0)
            return StreamOutcome(uuid_, shard_id, sent, len(done), 0, OK)
        discarded = 0
        if mapping.get("BisectBatchOnFunctionError") and len(batch.records) > 1:
            half = len(batch.records) // 2
            shard.waiting[0:1] = [
                Batch(part, batch.attempts) for part in (batch.records[:half], batch.records[half:])
            ]
        else:
            batch.attempts += 1
            retry_limit = int(mapping.get("MaximumRetryAttempts", -1))
            if retry_limit != -1 and batch.attempts > retry_limit:
                discarded = self._discard(role, mapping, source, shard_id, shard, RETRIES_EXHAUSTED)
        return StreamOutcome(uuid_, shard_id, sent, len(done) + discarded, discarded, FUNCTION_FAILED)

    def _discard(
        self,
        role: boto3.Session,
        mapping: dict[str, Any],
        source: Source,
        shard_id: str,
        shard: Shard,
        condition: str,
    ) -> int:
        """Give up on the first waiting batch: describe it to the on-failure destination, move past it."""
        batch = shard.waiting.pop(0)
        shard.checkpoint = batch.records[-1]["SequenceNumber"]
        target = ((mapping.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        if target:
            _deliver(role, str(target), _failure_record(mapping, source.info_key, shard_id, batch, condition))
        return len(batch.records)

    def _iterator_age(self, platform: boto3.Session, function_name: str, age_ms: float) -> None:
        dimensions = [[{"Name": "FunctionName", "Value": function_name}]]
        values = [("IteratorAge", max(age_ms, 0.0), "Milliseconds")]
        put_datapoints(self._client(platform, "cloudwatch"), NAMESPACE, values, dimensions, datetime.now(UTC))


class _Kinesis:
    """A Kinesis stream, read with the function's role (with-kinesis.html)."""

    info_key = "KinesisBatchInfo"

    def __init__(self, role: Any, arn: str) -> None:
        self._client, self.arn = role("kinesis"), arn

    def shards(self) -> list[str]:
        return [s["ShardId"] for s in self._client.list_shards(StreamARN=self.arn)["Shards"]]

    def read(self, shard_id: str, after: str | None, limit: int) -> list[dict[str, Any]]:
        where = (
            {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": after}
            if after is not None
            else {"ShardIteratorType": "TRIM_HORIZON"}
        )
        found = self._client.get_shard_iterator(StreamARN=self.arn, ShardId=shard_id, **where)
        answer = self._client.get_records(
            StreamARN=self.arn, ShardIterator=found["ShardIterator"], Limit=limit
        )
        return [
            {
                "SequenceNumber": r["SequenceNumber"],
                "arrival": _seconds(r["ApproximateArrivalTimestamp"]),
                "raw": r,
            }
            for r in answer["Records"]
        ]

    def event_record(self, record: dict[str, Any], shard_id: str, role_arn: str) -> dict[str, Any]:
        """One record of the event (with-kinesis.html, "Example event")."""
        raw = record["raw"]
        return {
            "kinesis": {
                "kinesisSchemaVersion": "1.0",
                "partitionKey": raw["PartitionKey"],
                "sequenceNumber": raw["SequenceNumber"],
                "data": base64.b64encode(raw["Data"]).decode(),
                "approximateArrivalTimestamp": round(record["arrival"], 3),
            },
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"{shard_id}:{raw['SequenceNumber']}",
            "eventName": "aws:kinesis:record",
            "invokeIdentityArn": role_arn,
            "awsRegion": self.arn.split(":")[3],
            "eventSourceARN": self.arn,
        }


class _TableStream:
    """A DynamoDB table's stream, read with the function's role (with-ddb.html)."""

    info_key = "DDBStreamBatchInfo"

    def __init__(self, role: Any, arn: str) -> None:
        self._client, self.arn = role("dynamodbstreams"), arn

    def shards(self) -> list[str]:
        return [
            s["ShardId"]
            for s in self._client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        ]

    def read(self, shard_id: str, after: str | None, limit: int) -> list[dict[str, Any]]:
        where = (
            {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after}
            if after is not None
            else {"ShardIteratorType": "TRIM_HORIZON"}
        )
        found = self._client.get_shard_iterator(StreamArn=self.arn, ShardId=shard_id, **where)
        answer = self._client.get_records(ShardIterator=found["ShardIterator"], Limit=min(limit, 1000))
        return [
            {
                "SequenceNumber": r["dynamodb"]["SequenceNumber"],
                "arrival": _seconds(r["dynamodb"]["ApproximateCreationDateTime"]),
                "raw": r,
            }
            for r in answer["Records"]
        ]

    def event_record(self, record: dict[str, Any], shard_id: str, role_arn: str) -> dict[str, Any]:
        """One record of the event (with-ddb.html, "Example DynamoDB Streams record event")."""
        raw = record["raw"]
        change = {k: v for k, v in raw["dynamodb"].items() if k != "ApproximateCreationDateTime"}
        return {
            "eventID": raw.get("eventID", f"{shard_id}:{record['SequenceNumber']}"),
            "eventVersion": "1.1",
            "dynamodb": {"ApproximateCreationDateTime": int(record["arrival"]), **change},
            "awsRegion": self.arn.split(":")[3],
            "eventName": raw.get("eventName", "MODIFY"),
            "eventSourceARN": self.arn,
            "eventSource": "aws:dynamodb",
        }


Source = _Kinesis | _TableStream


def _is_stream(arn: str) -> bool:
    """A Kinesis stream's ARN, or a DynamoDB table stream's (``...:table/<name>/stream/<label>``)."""
    service = arn.split(":")[2:3]
    return service == ["kinesis"] or (service == ["dynamodb"] and "/stream/" in arn)


def _source(role: Any, arn: str) -> Source:
    return _Kinesis(role, arn) if arn.split(":")[2] == "kinesis" else _TableStream(role, arn)


def _start(source: Source, shard_id: str, after: float | None) -> str | None:
    """The checkpoint a shard is read after: the last record that arrived before ``after`` (seconds since
    the epoch), none when no record did or ``after`` is None (from the first record kept)."""
    if after is None:
        return None
    last, start = None, None
    while records := source.read(shard_id, start, _READ_LIMIT):
        start = records[-1]["SequenceNumber"]
        earlier = [r for r in records if r["arrival"] < after]
        if earlier:
            last = earlier[-1]["SequenceNumber"]
        if len(earlier) < len(records):
            break
    return last


def _seconds(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _first_failure(invocation: Invocation, records: list[dict[str, Any]], mapping: dict[str, Any]) -> int:
    """The index of the first record to retry; the batch's length when all succeeded. A function error, or
    a partial response Lambda cannot read, fails the whole batch (services-kinesis-batchfailurereporting)."""
    whole = len(records)
    if invocation.status != "succeeded":
        return 0
    response = invocation.result
    if "ReportBatchItemFailures" not in (mapping.get("FunctionResponseTypes") or []) or response in (
        None,
        "",
    ):
        return whole
    failures = response.get("batchItemFailures") if isinstance(response, dict) else ()
    if failures is None or failures == []:
        return whole
    sequence = [r["SequenceNumber"] for r in records]
    named = [f.get("itemIdentifier") if isinstance(f, dict) else None for f in failures or ()]
    if not isinstance(failures, list) or any(n not in sequence for n in named):
        return 0
    return min(sequence.index(n) for n in named)


def _failure_record(
    mapping: dict[str, Any], info_key: str, shard_id: str, batch: Batch, condition: str
) -> dict[str, Any]:
    """The invocation record of kinesis-on-failure-destination.html: metadata only, no record data."""
    first, last = batch.records[0], batch.records[-1]
    invocation = batch.last
    record: dict[str, Any] = {
        "requestContext": {
            "requestId": invocation.request_id if invocation else str(uuid.uuid4()),
            "functionArn": mapping["FunctionArn"],
            "condition": condition,
            "approximateInvokeCount": batch.attempts,
        },
        "responseContext": {
            "statusCode": 200,
            "executedVersion": invocation.version if invocation else "$LATEST",
            "functionError": "Unhandled",
        }
        if invocation and invocation.status != "succeeded"
        else {},
        "version": "1.0",
        "timestamp": _iso(time.time()),
        info_key: {
            "shardId": shard_id,
            "startSequenceNumber": first["SequenceNumber"],
            "endSequenceNumber": last["SequenceNumber"],
            "approximateArrivalOfFirstRecord": _iso(first["arrival"]),
            "approximateArrivalOfLastRecord": _iso(last["arrival"]),
            "batchSize": len(batch.records),
            "streamArn": mapping["EventSourceArn"],
        },
    }
    return record


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _deliver(role: boto3.Session, target: str, record: dict[str, Any]) -> None:
    """Send the record with the function's role; a delivery that fails is lost, as the shard moves on."""
    body = json.dumps(record)
    try:
        if ":sqs:" in target:
            _, _, _, region, account, name = target.split(":", 5)
            sqs = role.client("sqs", region_name=region, config=_CLIENT_CONFIG)
            url = f"{str(sqs.meta.endpoint_url).rstrip('/')}/{account}/{name}"
            sqs.send_message(QueueUrl=url, MessageBody=body)
        elif ":sns:" in target:
            role.client("sns", config=_CLIENT_CONFIG).publish(TopicArn=target, Message=body)
    except ClientError:
        pass


def _access_denied(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in ("AccessDenied", "AccessDeniedException") or code.endswith("AccessDenied")
