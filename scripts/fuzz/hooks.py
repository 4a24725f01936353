"""Schemathesis hooks of `npm run fuzz` (loaded through SCHEMATHESIS_HOOKS by scripts/fuzz.mjs).

`cursor` is an opaque, signed value that only a previous page of the same list can give
(server/lib/cursor.ts): a string the generator makes up is never valid data, whatever the
schema says, and the server rightly refuses it with 400 (catalogue H10). Positive cases
therefore go without a cursor; negative cases keep their made-up ones, so the refusal is
still checked (negative_data_rejection).

A file part is declared the OpenAPI 3.1 way, by `encoding.<part>.contentType` with an empty
schema, which lets the generator make any JSON value (null, which a multipart body cannot carry,
so the part is left out; or an object sent as a text field): never a file. Positive cases get a
few bytes there instead.
"""

import json
import os
import uuid

import schemathesis
from schemathesis import GenerationMode


@schemathesis.hook
def map_case(context, case):
    return _positive_fixed(case)


@schemathesis.hook
def before_add_examples(context, examples):
    # The examples phase does not run map_case; its cases come from the documents' examples, where
    # a parameter's examples are merged across an operation's examples (a 400 example's bad cursor
    # becomes the only cursor example, sent with every positive example).
    for case in examples:
        _positive_fixed(case)


# Fields naming one of the workspace's resources (its business account, a phone number's id,
# the sender number, a contact, a chat, a template, a Connect document), from the seed (scripts/fuzz.mjs
# passes them): a made-up id or number is a 404, never a case that reaches the handler. Positive cases carrying such a field get the seeded value.
# `operations` holds values for one operation only (by operationId): the sender's contact with an
# open 24-hour window, a message of its chat to reply or react to, a stored template.
FIELDS = json.loads(os.environ.get("FUZZ_FIELDS") or "{}")


def _positive(case):
    meta = case.meta
    # A case can be positive as a whole with one component (e.g. the body) made invalid on purpose.
    return not (
        meta is None
        or meta.generation.mode != GenerationMode.POSITIVE
        or any(info.mode != GenerationMode.POSITIVE for info in meta.components.values())
    )


def _positive_fixed(case):
    if not _positive(case):
        return case
    if isinstance(case.query, dict):
        case.query.pop("cursor", None)
    by_operation = (FIELDS.get("operations") or {}).get(case.operation.definition.raw.get("operationId"), {})
    for container in (case.query, case.body):
        if isinstance(container, dict):
            for name, value in FIELDS.items():
                if name != "operations" and name in container and value:
                    container[name] = value
            for name, value in by_operation.items():
                # `a.b` names the field `b` of the object in `a`
                *outer, last = name.split(".")
                target = container
                for part in outer:
                    target = target.get(part) if isinstance(target, dict) else None
                if isinstance(target, dict) and last in target and value:
                    target[last] = json.loads(json.dumps(value))  # a copy: cases must not share objects
    # An Idempotency-Key names one request: a key the generator repeats with another body is
    # rightly a 409. Positive cases get a fresh key.
    if isinstance(case.headers, dict):
        for name in list(case.headers):
            if name.lower() == "idempotency-key":
                case.headers[name] = uuid.uuid4().hex
    if (
        (case.media_type or "").startswith("multipart/form-data")
        and isinstance(case.body, dict)
        and not isinstance(case.body.get("file"), (bytes, bytearray))
    ):
        case.body["file"] = b"fuzz"
    return case


# ---- the Messaging API's webhooks: signed or completed in positive cases ----------------------
# The provider's webhook (POST /api/webhook/chatapp) is authenticated by X-Hub-Signature-256, the
# hex HMAC-SHA256 of the raw body under the app secret; its subscription check (GET) by
# hub.verify_token; a storefront's order events (POST /api/ecommerce-webhook/{id}/orders) by the
# base64 HMAC-SHA256 of the raw body under the order webhook's secret (the seeded one is
# WooCommerce's: X-WC-Webhook-Signature). The seed gives the secrets (scripts/fuzz.mjs passes them).
# Positive cases are signed over the exact bytes sent (the body is serialized here and passed as
# the request's data); negative cases keep whatever signature the generator made, so the 401 and
# 403 answers stay checked.
import base64
import hashlib
import hmac

SIGNING = json.loads(os.environ.get("FUZZ_SIGNING") or "null") or {}


def _json_bytes(case):
    if not (case.media_type or "").startswith("application/json") or not isinstance(case.body, (dict, list, str, int, float, bool)):
        return None
    try:
        return json.dumps(case.body, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError):
        return None


def _sign(case, kwargs, header, secret, encode):
    raw = _json_bytes(case)
    if raw is None or not secret:
        return
    digest = hmac.new(secret.encode("utf-8"), raw, hashlib.sha256).digest()
    if case.headers is None:
        case.headers = {}
    case.headers[header] = encode(digest)
    kwargs["data"] = raw


@schemathesis.hook
def before_call(context, case, kwargs):
    if not SIGNING or not _positive(case):
        return
    path, method = case.operation.path, case.method.upper()
    if path == "/api/webhook/chatapp" and method == "GET" and isinstance(case.query, dict):
        case.query["hub.mode"] = "subscribe"
        case.query["hub.verify_token"] = SIGNING.get("provider_verify_token")
    elif path == "/api/webhook/chatapp" and method == "POST":
        _sign(case, kwargs, "X-Hub-Signature-256", SIGNING.get("provider_app_secret"), lambda d: "sha256=" + d.hex())
    elif path == "/api/ecommerce-webhook/{id}/orders" and method == "POST":
        _sign(case, kwargs, "X-WC-Webhook-Signature", SIGNING.get("order_webhook_secret"), lambda d: base64.b64encode(d).decode())


# ---- positive_data_acceptance, as this contract states it ------------------------------------
# Schemathesis's positive_data_acceptance expects every schema-valid request to be accepted
# (2xx, or 401/403/404/409/429). Our contract documents refusals that JSON Schema cannot
# express: a date that must be in the future, mutually exclusive fields, a phone number that
# libphonenumber rejects, a custom field that must exist in the workspace, an unsafe URL
# (catalogue G, H5, H14). The documents pair such requests with their 400/422 answers
# (@opExample), which the examples phase sends as positive data.
# This check (run instead of positive_data_acceptance, see scripts/fuzz.mjs) keeps what that
# check is for, finding a server stricter than its document, and asks more of every refusal:
# - the refusal is a problem+json (OAuth endpoints: an RFC 6749 error) with a type;
# - a 400 `validation` names each field in `errors[]` with a JSON pointer;
# - no error is the schema validator's own message: a schema-valid request the validator refuses
#   means the server's schema differs from the document, which is exactly the drift to catch.
import re

PROBLEMS = "https://chatapp.example/problems/"
ACCEPTED = {401, 403, 404, 409, 429}
# Messages of Ajv (server/lib/validation.ts's describe()), never of a handler's own rule.
VALIDATOR_MESSAGE = re.compile(
    r"^(is required$|is not a known field$|must (be (object|string|integer|number|boolean|array|null|equal to|[<>]=?)\b"
    r"|match (pattern|format|exactly|a schema)|NOT |have required|pass )|must be one of )"
)


@schemathesis.check
def positive_data_refused_for_a_reason(ctx, response, case):
    meta = case.meta
    status = response.status_code
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE or status < 400 or status >= 500 or status in ACCEPTED:
        return None
    content_type = (response.headers.get("content-type") or [""])[0].split(";")[0].strip()
    if content_type == "text/html" and content_type in _documented_types(case, status):
        return None  # the consent and authorize error pages (catalogue C1, M5)
    try:
        body = response.json()
    except Exception:
        raise AssertionError(f"Schema-valid request refused with {status} and a body that is not JSON")
    if not isinstance(body, dict):
        raise AssertionError(f"Schema-valid request refused with {status} and no problem object")
    if "error" in body and case.operation.path.startswith("/api/oauth/"):
        return None  # RFC 6749 §5.2 errors (catalogue C14)
    kind = str(body.get("type", ""))
    if not kind.startswith(PROBLEMS):
        raise AssertionError(f"Schema-valid request refused with {status} without a problem type: {body!r:.300}")
    errors = body.get("errors") or []
    if status == 400 and kind == PROBLEMS + "validation" and not errors:
        raise AssertionError(f"Schema-valid request refused as invalid without naming a field: {body.get('detail')!r}")
    for error in errors:
        detail = str(error.get("detail", "")) if isinstance(error, dict) else ""
        if VALIDATOR_MESSAGE.match(detail):
            raise AssertionError(
                f"Schema-valid request refused by the schema validator at {error.get('pointer')}: {detail!r} "
                "(the server's schema is stricter than the document)"
            )
    return None


def _documented_types(case, status):
    """Media types the operation documents for `status` (or its `4XX`/`default` entry)."""
    responses = case.operation.definition.raw.get("responses", {})
    entry = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default") or {}
    return set((entry.get("content") or {}).keys())
