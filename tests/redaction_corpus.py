"""The project's own redaction corpus: secrets in the forms Lambda functions print them (log lines, an
environment dump, SDK debug output, JSON-format records, URLs) and look-alikes a diagnosis needs intact.

Every secret is built here from the formats' documentation (AWS's documented example keys, RFC 7515/7516
token shapes, the vendors' published prefixes); none is a real credential. ``Secret.values`` are what must
not survive in any form (as written, decoded, or URL-encoded); ``kinds`` the placeholders expected.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from dataclasses import dataclass

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example
TEMPORARY_KEY = "ASIAY34FZKBOKMUTVV7A"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example
# STS session tokens: the current form starts with the encoding of b"!\n\torigin", an older one "FwoG...".
SESSION_TOKEN = "IQoJb3JpZ2luX2VjE" + base64.b64encode(bytes(range(7, 247))).decode().rstrip("=")
OLD_SESSION_TOKEN = "FwoGZXIvYXdzEBYaD" + base64.b64encode(bytes(range(200, 20, -1))).decode().rstrip("=")
JWS = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
JWE = (  # header.encrypted key.iv.ciphertext.tag (RFC 7516's shape; Cognito's refresh tokens are JWEs)
    "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9k"
    ".48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBt"
    ".XFBoMYUZodetZdvTiFvSkQ"
)
JWE_DIRECT = (
    "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..gA2mZx7AUmxZbDdL.kOuUBm8yQXVx6kBVFixtkw.ztBRPXyW7gVyXBs1z7iSdg"
)
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq9z1\nx8Y2kQ==\n-----END RSA PRIVATE KEY-----"
PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBGVhZ2xlAQgAy3Kq9z1x8Y2\n=Xk3a\n"
    "-----END PGP PRIVATE KEY BLOCK-----"
)
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_FINE = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK = "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
BASIC = base64.b64encode(b"orders-app:s3cr3t-P4ss").decode()


@dataclass(frozen=True)
class Secret:
    name: str
    text: str  # a line as a function prints it
    values: tuple[str, ...]  # what must not survive
    kinds: tuple[str, ...]  # the placeholders that stand for them


def _s(name: str, text: str, values: str | tuple[str, ...], *kinds: str) -> Secret:
    return Secret(name, text, (values,) if isinstance(values, str) else values, kinds)


def _escaped(text: str) -> str:
    """``text`` as a JSON encoder that escapes "/" writes it inside a string (PHP's, Java's org.json)."""
    return json.dumps(text)[1:-1].replace("/", "\\/")


SECRETS: tuple[Secret, ...] = (
    # --- the kinds, as they are usually printed
    _s("jws", f"token {JWS} sent", JWS, "jwt"),
    _s("jwe", f"refresh_with {JWE}", JWE, "jwt"),
    _s("jwe-direct", f"cookie session={JWE_DIRECT}; Path=/", JWE_DIRECT, "jwt"),
    _s("bearer", "Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234", "bearer_token"),
    _s("access-key", f"using key {ACCESS_KEY}", ACCESS_KEY, "aws_access_key"),
    _s("temporary-key", f"session {TEMPORARY_KEY}", TEMPORARY_KEY, "aws_access_key"),
    _s(
        "key-pair",
        f"aws_access_key_id={ACCESS_KEY} aws_secret_access_key={SECRET_KEY}",
        (ACCESS_KEY, SECRET_KEY),
        "aws_access_key",
        "aws_secret_key",
    ),
    _s("secret-key-named", f"AWS_SECRET_ACCESS_KEY={SECRET_KEY}", SECRET_KEY, "aws_secret_key"),
    _s("email", "mail bob.smith+x@example.co.uk now", "bob.smith+x@example.co.uk", "email"),
    _s("visa-spaced", "card 4111 1111 1111 1111 declined", "4111 1111 1111 1111", "card_number"),
    _s("visa-dashed", "card 4111-1111-1111-1111", "4111-1111-1111-1111", "card_number"),
    _s("amex", "amex 378282246310005", "378282246310005", "card_number"),
    _s("mastercard", "charged 5555555555554444 ok", "5555555555554444", "card_number"),
    _s("pem", f"key:\n{PEM}\nloaded", "MIIEowIBAAKCAQEAq9z1", "private_key"),
    _s("pem-cut", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg", "MIIEvQIBADANBg", "private_key"),
    _s("pgp", f"imported {PGP}", "lQOYBGVhZ2xlAQgAy3Kq9z1x8Y2", "private_key"),
    _s(
        "url-password",
        "connect postgres://admin:hunter2@db.example.com:5432/orders",
        "hunter2",
        "url_password",
    ),
    _s(
        "url-password-no-user",
        "cache redis://:tok3n-Secret@cache.internal:6379/0",
        "tok3n-Secret",
        "url_password",
    ),
    _s("url-password-with-at", "db mysql://app:p@ss@word@db.internal/orders", "p@ss@word", "url_password"),
    # --- escapes and encodings
    _s("csv-card-after-newline", "id,card\n4111111111111111,ok", "4111111111111111", "card_number"),
    _s("key-after-newline", f"rotated keys:\n{ACCESS_KEY}", ACCESS_KEY, "aws_access_key"),
    _s("card-after-nbsp", "paid\u00a04111111111111111", "4111111111111111", "card_number"),
    _s("card-after-tab", "card\t4111111111111111", "4111111111111111", "card_number"),
    _s(
        "secret-key-slash-escaped",
        f'credentials {{"AccessKeyId": "{ACCESS_KEY}", "SecretAccessKey": "{_escaped(SECRET_KEY)}"}}',
        (ACCESS_KEY, SECRET_KEY, _escaped(SECRET_KEY)),
        "aws_access_key",
        "aws_secret_key",
    ),
    _s(
        "json-text-escaped",
        _escaped('{"password": "correct horse", "card": "4111111111111111"}'),
        ("correct horse", "4111111111111111"),
        "secret",
        "card_number",
    ),
    _s(
        "email-url-encoded",
        "GET /users?email=bob%40example.com",
        ("bob%40example.com", "bob@example.com"),
        "email",
    ),
    _s(
        "secret-url-encoded",
        f"callback?secret={urllib.parse.quote(SECRET_KEY, safe='')}&id=1",
        (urllib.parse.quote(SECRET_KEY, safe=""), SECRET_KEY),
        "aws_secret_key",
    ),
    _s("card-url-encoded", "q=4111%201111%201111%201111", ("4111%201111%201111%201111",), "card_number"),
    # --- the credential every Lambda function carries
    _s("env-session-token", f"AWS_SESSION_TOKEN={SESSION_TOKEN}", SESSION_TOKEN, "aws_session_token"),
    _s("old-session-token", f"token in use: {OLD_SESSION_TOKEN}", OLD_SESSION_TOKEN, "aws_session_token"),
    _s(
        "environ-repr",
        f"environ({{'AWS_ACCESS_KEY_ID': '{TEMPORARY_KEY}', 'AWS_SECRET_ACCESS_KEY': '{SECRET_KEY}', "
        f"'AWS_SESSION_TOKEN': '{SESSION_TOKEN}', 'AWS_REGION': 'ca-central-1'}})",
        (TEMPORARY_KEY, SECRET_KEY, SESSION_TOKEN),
        "aws_access_key",
        "aws_secret_key",
        "aws_session_token",
    ),
    _s(
        "sts-json",
        json.dumps(
            {
                "Credentials": {
                    "AccessKeyId": TEMPORARY_KEY,
                    "SecretAccessKey": SECRET_KEY,
                    "SessionToken": SESSION_TOKEN,
                    "Expiration": "2026-11-29T12:00:00Z",
                }
            }
        ),
        (TEMPORARY_KEY, SECRET_KEY, SESSION_TOKEN),
        "aws_access_key",
        "aws_secret_key",
        "aws_session_token",
    ),
    _s(
        "presigned-url",
        "https://bucket.s3.amazonaws.com/report.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
        f"{TEMPORARY_KEY}%2F20261129%2Fca-central-1%2Fs3%2Faws4_request&X-Amz-Security-Token="
        f"{urllib.parse.quote(SESSION_TOKEN, safe='')}&X-Amz-Signature=abc123",
        (TEMPORARY_KEY, SESSION_TOKEN, urllib.parse.quote(SESSION_TOKEN, safe="")),
        "aws_access_key",
        "aws_session_token",
    ),
    _s("header", f"X-Amz-Security-Token: {SESSION_TOKEN}", SESSION_TOKEN, "aws_session_token"),
    _s(
        "botocore-headers",
        f"Sending http request: <AWSPreparedRequest headers={{'X-Amz-Security-Token': b'{SESSION_TOKEN}', "
        "'X-Amz-Date': b'20261129T101500Z'}>",
        SESSION_TOKEN,
        "aws_session_token",
    ),
    _s(
        "session-token-named",
        "session_token=Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA",
        "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA",
        "secret",
    ),
    # --- basic auth, OAuth, and keys that name a secret
    _s("basic-auth", f"Authorization: Basic {BASIC}", BASIC, "basic_auth"),
    _s("basic-auth-lower", f"headers: {{'authorization': 'Basic {BASIC}'}}", BASIC, "basic_auth"),
    _s(
        "oauth-json",
        '{"client_id": "orders-app", "client_secret": "9f8e7d6c5b4a", "access_token": "at-0123456789", '
        '"refresh_token": "rt-9876543210", "token_type": "Bearer", "expires_in": 3600}',
        ("9f8e7d6c5b4a", "at-0123456789", "rt-9876543210"),
        "secret",
    ),
    _s("password-equals", "login password=hunter2 ok", "hunter2", "secret"),
    _s("passwd-colon", "passwd: Tr0ub4dor-3", "Tr0ub4dor-3", "secret"),
    _s("db-password-env", "DB_PASSWORD='correct horse battery'", "correct horse battery", "secret"),
    _s("api-key", "api_key=ak_9c1e5b7d3f", "ak_9c1e5b7d3f", "secret"),
    _s("api-key-camel", '{"apiKey": "k-1234567890abcdef"}', "k-1234567890abcdef", "secret"),
    _s(
        "private-key-json",
        '{"private_key": "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC"}',
        "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC",
        "secret",
    ),
    _s("secret-number", '{"pin_secret": 482913}', "482913", "secret"),
    _s(
        "token-list",
        '{"tokens": ["a"], "token": ["t0k3n-one", "t0k3n-two"]}',
        ("t0k3n-one", "t0k3n-two"),
        "secret",
    ),
    _s("passphrase", "ssh passphrase: 'open sesame'", "open sesame", "secret"),
    _s("credentials", "CREDENTIALS=user1:pa55word", "user1:pa55word", "secret"),
    _s("discover-in-csv", "2,order,6011111111111117,ca", "6011111111111117", "card_number"),
    _s("card-number-json", '{"order": 7, "card": 4111111111111111}', "4111111111111111", "card_number"),
    # --- other vendors, by their published prefixes
    _s("github", f"git clone https://x-access-token:{GITHUB}@github.com/o/r", GITHUB, "url_password"),
    _s("github-bare", f"GH token {GITHUB} loaded", GITHUB, "github_token"),
    _s("github-fine-grained", f"using {GITHUB_FINE}", GITHUB_FINE, "github_token"),
    _s("slack", f"slack bot {SLACK}", SLACK, "slack_token"),
    _s(
        "slack-webhook",
        f"posting to https://hooks.slack.com/services/{SLACK_HOOK}",
        SLACK_HOOK,
        "slack_token",
    ),
    _s("stripe", f"stripe.api_key set: {STRIPE}", STRIPE, "stripe_key"),
    _s("google", f"maps call key={GOOGLE}&q=x", GOOGLE, "google_api_key"),
    _s("google-bare", f"GOOGLE_KEY loaded {GOOGLE}", GOOGLE, "google_api_key"),
    # --- several in one line
    _s(
        "mixed",
        f"user bob@example.com paid 4111111111111111 with key {ACCESS_KEY}",
        ("bob@example.com", "4111111111111111", ACCESS_KEY),
        "email",
        "card_number",
        "aws_access_key",
    ),
)

REQUEST_ID = "8d1f3c2e-1234-4abc-8def-0123456789ab"
LOOK_ALIKES: tuple[tuple[str, str], ...] = (
    ("request-id", f"RequestId: {REQUEST_ID}"),
    ("trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
    ("luhn-request-id", "START RequestId: fffbeebe-767d-4e57-5513-13735379b83d Version: $LATEST"),
    ("digit-uuid", "request 46557210-1415-6183-6546-107358735570"),
    ("digest-fragment", "sha256:ab5904544091031776cd"),
    ("digest", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("git-hash", "commit 3f786850e387550fdab836ed7e6dc881de23001b"),
    ("code-hash", "CodeSha256: 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="),
    ("luhn-failing", "card 4111 1111 1111 1112"),
    ("epoch-ms", "at 1764100000000 ms"),
    ("epoch-ns", "ts=1764100000000000000"),
    ("arn", "account 123456789012 role arn:aws:iam::123456789012:role/data-processor-role"),
    ("function-arn", "arn:aws:lambda:ca-central-1:123456789012:function:data-processor:7"),
    ("secret-arn", '{"secret_arn": "arn:aws:secretsmanager:ca-central-1:123456789012:secret:db-AbCdEf"}'),
    ("secret-name", "secret_name=prod/orders/db"),
    ("s3-uri", "processing s3://data-processor-input/incoming/orders-0001.json"),
    ("s3-key", '{"key": "incoming/orders-0001.json", "PartitionKey": "c-0001"}'),
    ("report", f"REPORT RequestId: {REQUEST_ID}\tDuration: 45.19 ms\tMax Memory Used: 50 MB"),
    ("addresses", "from 10.0.1.25 to 52.94.0.1:443"),
    ("bearer-word", "the word Bearer alone, and Bearer short"),
    ("basic-word", "the Basic plan and Basic tier"),
    ("at-signs", "user@localhost and @channel"),
    ("placeholder", "[REDACTED:email] already replaced"),
    ("event-id", '{"eventID": "3038ebd2-c98a-4c65-9b6e-e22506292313", "eventName": "PutRolePolicy"}'),
    ("resource-ids", "sg-0a1b2c3d4e5f67890 subnet-0123456789abcdef0 vpc-0fedcba9876543210 eni-0a1b2c3d"),
    ("log-stream", "2026/11/29/[$LATEST]1e283bf9026e44f5ac9874445ce914d0"),
    ("api-path", "GET /orders/0001-000/items?limit=25&next=2"),
    ("base64-payload", "data SGVsbG8gV29ybGQhIFRoaXMgaXMgYSB0ZXN0IG9m record"),  # 40 characters of base64
    ("base64-json", "body eyJvcmRlcl9pZCI6ICIwMDAxIn0= decoded"),
    ("token-counts", '{"input_tokens": 1234, "output_tokens": 56, "max_tokens": 4096}'),
    ("token-type", '{"token_type": "Bearer", "expires_in": 3600, "token_expires_at": "2026-11-30"}'),
    (
        "password-policy",
        '{"password_policy": "strict", "passwordless": true, "password_last_used": "2026-11-01"}',
    ),
    ("empty-password", '{"password": ""}'),
    ("key-id", '{"KmsKeyArn": "arn:aws:kms:ca-central-1:123456789012:key/mrk-1234", "key_id": "mrk-1234"}'),
    ("access-key-id-label", "access_key_id label shown, value elsewhere"),
    ("url-user-only", "https://user@example.com/path and http://host:8080/x"),
    ("durations", "Duration: 1001.30 ms Billed Duration: 1002 ms Init Duration: 230.12 ms"),
    ("json-numbers", '{"amount": 42.5, "count": 25, "bytes": 1048576, "epoch": 1764100000}'),
    ("prefix-words", "the gh_ prefix, sk_live mention, AIza short, xoxb alone"),
    ("version-ids", "VersionId 3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"),
    ("x-ray-header", "X-Amzn-Trace-Id: Root=1-67891233-abcdef012345678912345678"),
)
