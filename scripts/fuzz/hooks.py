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

import base64
import hashlib
import hmac
import itertools
import json
import os
import re
import uuid
from datetime import datetime, timedelta, timezone

import schemathesis
from schemathesis import GenerationMode


@schemathesis.hook
def map_case(context, case):
    return _oidc_fixed(_messaging_fixed(_account_login(_connect_fixed(_positive_fixed(case), generated=True))), generated=True)


@schemathesis.hook
def before_add_examples(context, examples):
    # The examples phase does not run map_case; its cases come from the documents' examples, where
    # a parameter's examples are merged across an operation's examples (a 400 example's bad cursor
    # becomes the only cursor example, sent with every positive example).
    for case in examples:
        _oidc_fixed(_messaging_fixed(_account_login(_connect_fixed(_positive_fixed(case), generated=False))), generated=False)


# Fields naming one of the workspace's resources (its business account, a phone number's id,
# the sender number, a contact, a chat, a template, a Connect document), from the seed (scripts/fuzz.mjs
# passes them): a made-up id or number is a 404, never a case that reaches the handler. Positive cases carrying such a field get the seeded value.
# `operations` holds values for one operation only (by operationId): the sender's contact with an
# open 24-hour window, a message of its chat to reply or react to, a stored template.
FIELDS = json.loads(os.environ.get("FUZZ_FIELDS") or "{}")
# A counter for values no earlier case used (emails, slugs, event ids, names, numbers).
_unique = itertools.count(1)


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


# ---- Account and Login ------------------------------------------------------------------------
# Values a schema cannot give (scripts/fuzz/server.ts's seedAccountLogin, passed by scripts/fuzz.mjs):
# - createSession: a positive case signs in as the seeded owner (a made-up email or password is
#   the same 401 every time, and 10 of them from one IP answer 429 for 15 minutes);
# - createWorkspace: a positive case gets an email and a slug no earlier case used (hypothesis
#   repeats its small values, and a taken one is 409): a counter prefixed to the email's local
#   part and suffixed to the slug, the rest as generated;
# - checkLoginCode and resendLoginCode: a positive case takes the next session of a seeded pool
#   (`before_call`; a session sends one code per 30 s and verifies once), and a check sends the
#   code the seeded sessions hold; once a pool is used up, the pinned session answers 409 or 429;
# - receiveHostedLoginWebhook: a positive case that carries an X-Login-Signature is signed with the
#   hosted app's webhook secret over the exact bytes sent (`before_call`), and its X-Login-Event-Id,
#   if any, is the body's id. One without the header, or with a well-formed `sha256=<64 hex>`
#   (the documents' examples), and every negative case go as generated: the 401 stays tested.

ACCOUNT_LOGIN = json.loads(os.environ.get("FUZZ_ACCOUNT_LOGIN") or "{}")
_DOT_ATOM = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
_SIGNATURE = re.compile(r"^sha256=[0-9a-f]{64}$")
_EVENT_ID = re.compile(r"[a-z]{2,6}_[0-9A-Za-z]{8,48}")
HOSTED_WEBHOOK = "/api/chatapp-auth/webhook/{appId}"


def _account_login(case):
    if not ACCOUNT_LOGIN or not _positive(case) or not isinstance(case.body, dict) or case.method.upper() != "POST":
        return case
    body, path = case.body, case.operation.path
    if path == "/api/account/sessions" and ACCOUNT_LOGIN.get("email"):
        body["email"], body["password"] = ACCOUNT_LOGIN["email"], ACCOUNT_LOGIN["password"]
    elif path == "/api/account/workspaces":
        n = next(_unique)
        local, _, domain = str(body.get("email", "")).rpartition("@")
        email = f"fuzz{n}.{local}@{domain}"
        body["email"] = email if _DOT_ATOM.match(local) and len(local) < 50 and len(email) <= 254 else f"fuzz{n}@example.test"
        slug = str(body.get("workspace_slug", "ws"))
        body["workspace_slug"] = f"{slug[:32]}-{n}"
    elif path == "/v1/auth/chatapp/check/{sessionId}" and ACCOUNT_LOGIN.get("loginCode"):
        body["code"] = ACCOUNT_LOGIN["loginCode"]
    return case


# The OIDC authorization endpoint: the seeded app's `client_id` and its registered `redirect_uri`
# (anything else is the 400 page that never redirects, catalogue O1); the other parameters stay
# generated, and their errors redirect (302, documented), or the sign-in page is shown (200).
OIDC_AUTHORIZE = "/login/oidc/{appId}/authorize"


def _oidc_fixed(case, generated):
    if not ACCOUNT_LOGIN.get("oidcAppId") or not _positive(case) or case.operation.path != OIDC_AUTHORIZE:
        return case
    query = case.query if isinstance(case.query, dict) else None
    if generated:
        case.query = query = query if query is not None else {}
        query["redirect_uri"] = ACCOUNT_LOGIN["oidcRedirectUri"]
    # The documents' examples name the seeded callback already (the seed registers it).
    if generated or (query is not None and "client_id" in query):
        query["client_id"] = ACCOUNT_LOGIN["oidcAppId"]
    return case


# Positive resend and check cases each take the next fresh session of the seeded pools.
_pools = {
    "/v1/auth/chatapp/resend/{sessionId}": iter(ACCOUNT_LOGIN.get("resendSessions") or []),
    "/v1/auth/chatapp/check/{sessionId}": iter(ACCOUNT_LOGIN.get("checkSessions") or []),
}


# ---- the Messaging API's webhooks: signed or completed in positive cases ----------------------
# The provider's webhook (POST /api/webhook/chatapp) is authenticated by X-Hub-Signature-256, the
# hex HMAC-SHA256 of the raw body under the app secret; its subscription check (GET) by
# hub.verify_token; a storefront's order events (POST /api/ecommerce-webhook/{id}/orders) by the
# base64 HMAC-SHA256 of the raw body under the order webhook's secret (the seeded one is
# WooCommerce's: X-WC-Webhook-Signature). The seed gives the secrets (scripts/fuzz.mjs passes them).
# Positive cases are signed over the exact bytes sent (the body is serialized here and passed as
# the request's data); negative cases keep whatever signature the generator made, so the 401 and
# 403 answers stay checked.

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


@schemathesis.hook("before_call")
def account_login_before_call(context, case, kwargs):
    pool = _pools.get(case.operation.path)
    if pool is not None and _positive(case) and isinstance(case.path_parameters, dict):
        session = next(pool, None)
        if session:
            case.path_parameters["sessionId"] = session
    secret = ACCOUNT_LOGIN.get("hostedWebhookSecret")
    if not secret or case.operation.path != HOSTED_WEBHOOK or not _positive(case) or not isinstance(case.body, dict):
        return
    headers = case.headers or {}
    event_id = next((k for k in headers if k.lower() == "x-login-event-id"), None)
    if event_id is not None:
        # The event id is the body's, an `evt_…` id. Schemathesis gives the header (a `$ref`
        # schema) values the pattern refuses even in positive cases (`0`), and Python's `$` lets a
        # trailing newline through where the server's does not: both ids are made valid and equal.
        if not (isinstance(case.body.get("id"), str) and _EVENT_ID.fullmatch(case.body["id"])):
            case.body["id"] = f"evt_fuzz{next(_unique):08d}"
        headers[event_id] = case.body["id"]
        case.headers = headers
    name = next((k for k in headers if k.lower() == "x-login-signature"), None)
    if name is None or _SIGNATURE.match(str(headers[name])):
        return
    # Sent as these bytes (`data` replaces the serialised body), so the HMAC covers what arrives.
    raw = json.dumps(case.body).encode()
    headers[name] = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    case.headers = headers
    kwargs["data"] = raw


# ---- Connect: the values a positive case needs to get past the server's business rules ------
# From the seed (scripts/fuzz/server.ts, passed as FUZZ_CONNECT for the Connect run only):
# - uploads: a file the server can type by content (PDF): any other bytes are a 415;
# - `version` (analytics, links): the seeded document's version 1, the one sure to exist;
# - createLink: a `recipient.phone` libphonenumber accepts (the seeded link's), an `expires_at`
#   in the future, and (generated cases) an `external_id` of its own: a document has one active
#   link per external_id, and the generator repeats the schema's example, so all but the first
#   were 409;
# - authorize: the credential client's `client_id` and its registered `redirect_uri` (anything
#   else is the 400 page that never redirects, RFC 6749 §4.1.2.1); the other parameters stay
#   generated, and their errors redirect (302, documented);
# - createToken: a refresh-token grant with a live refresh token of that client. Codes exist only
#   after an owner's consent in a browser, so no generated case can carry one; refresh tokens
#   rotate, so the token sent is set just before the call and the answer's replaces it.
# The examples phase keeps its examples (their documented refusals), with these ids swapped in.
CONNECT = json.loads(os.environ.get("FUZZ_CONNECT") or "{}")
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj "
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)
UPLOADS = {("POST", "/api/connect/documents"), ("POST", "/api/connect/documents/{documentId}/versions")}
LINK = ("POST", "/api/connect/links")
AUTHORIZE = ("GET", "/connect/authorize")
TOKEN = ("POST", "/api/oauth/token")
INTROSPECT = ("POST", "/api/oauth/introspect")
_refresh = {"pool": list(CONNECT.get("refresh_tokens") or []), "live": None}


def _future(value):
    """Whether an RFC 3339 date-time is ahead of now (a day's margin for the run)."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when > datetime.now(timezone.utc) + timedelta(days=1)


def _live_refresh_token():
    if _refresh["live"] is None and _refresh["pool"]:
        _refresh["live"] = _refresh["pool"].pop(0)
    return _refresh["live"]


def _connect_fixed(case, generated):
    if not CONNECT or not _positive(case):
        return case
    op = (case.method.upper(), case.operation.path)
    query = case.query if isinstance(case.query, dict) else None
    body = case.body if isinstance(case.body, dict) else None
    if op in UPLOADS and body is not None and (case.media_type or "").startswith("multipart/form-data"):
        body["file"] = PDF
    if case.operation.path.startswith("/api/connect/"):
        for container in (query, body):
            if container is not None and "version" in container:
                container["version"] = 1
        if body is not None and isinstance(body.get("recipient"), dict) and "phone" in body["recipient"]:
            body["recipient"]["phone"] = CONNECT["phone"]
    if op == LINK and body is not None:
        if "expires_at" in body and not _future(body["expires_at"]):
            body["expires_at"] = (datetime.now(timezone.utc) + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if generated and isinstance(body.get("external_id"), str):
            body["external_id"] = f"{body['external_id'][:240]}~{next(_unique)}"
    if op == AUTHORIZE:
        if generated:
            case.query = query = query if query is not None else {}
            query["redirect_uri"] = CONNECT["redirect_uri"]
        if generated or (query is not None and "client_id" in query):
            query["client_id"] = CONNECT["client_id"]
    if op == TOKEN and body is not None:
        if generated:
            # The client authenticates with HTTP Basic (OAuthClientBasic): no secret in the body.
            kept = {"client_id": CONNECT["client_id"]} if "client_id" in body else {}
            if "scope" in body:
                kept["scope"] = "documents:write"
            body.clear()
            body.update(kept, grant_type="refresh_token", refresh_token="")
        elif body.get("grant_type") == "refresh_token" and "client_id" in body:
            body["client_id"] = CONNECT["client_id"]
    if op == INTROSPECT and body is not None and generated:
        # HTTP Basic authenticates (OAuthClientBasic): a secret in the body too is invalid_request.
        body.pop("client_secret", None)
        if "client_id" in body:
            body["client_id"] = CONNECT["client_id"]
    return case


@schemathesis.hook("before_call")
def connect_before_call(context, case, **kwargs):
    # The live refresh token, set at the last moment: one sent earlier has rotated since.
    if CONNECT and _positive(case) and (case.method.upper(), case.operation.path) == TOKEN:
        body = case.body if isinstance(case.body, dict) else None
        if body is not None and body.get("grant_type") == "refresh_token" and _live_refresh_token():
            body["refresh_token"] = _refresh["live"]


@schemathesis.hook
def after_call(context, case, response):
    if not CONNECT or (case.method.upper(), case.operation.path) != TOKEN:
        return
    body = case.body if isinstance(case.body, dict) else {}
    if body.get("grant_type") != "refresh_token" or body.get("refresh_token") != _refresh["live"]:
        return
    try:
        answer = response.json()
    except Exception:
        return
    if response.status_code == 200 and isinstance(answer, dict) and answer.get("refresh_token"):
        _refresh["live"] = answer["refresh_token"]  # rotated
    elif isinstance(answer, dict) and answer.get("error") == "invalid_grant":
        _refresh["live"] = None  # revoked meanwhile (revokeToken, a replay): the next of the pool


# ---- Messaging: what a positive case needs past rules JSON Schema cannot state ----------------
# Each rule is in the operation's description and has a 4xx example; these hooks make positive
# cases obey it (the generated parts around it stay as generated), so the handlers' success paths
# are fuzzed too. Negative cases are left alone: their refusals stay checked.
# - createFlow, updateFlow: a graph whose connections join nodes of the flow, of catalogue types
#   with their parameters (the seeded flow's: a message trigger and a text reply); an update goes
#   without `version` (a stale one is a 409, covered by the unit tests);
# - createContact: a valid number no other contact has (libphonenumber decides validity), and
#   custom values only for `city`, a text field the seed made;
# - createContactImport: a CSV (a header and one new number);
# - createForm: field names unique, options exactly on the types that take them, with unique ids,
#   labels within the provider's limits, no custom field target;
# - createSegment: each condition on a built-in field its operator applies to, with a value of
#   that field's kind;
# - createTemplate: a new name, a language of the provider, one BODY (Meta's component rules), a
#   category other than AUTHENTICATION (which needs an OTP button);
# - mapOrderWebhookTemplate: the seeded template with one body variable (`FUZZ_FIELDS`), mapped
#   once;
# - createCustomField: a new key, choices (distinct) on a choice field only;
# - createSequence: a keyword no active sequence has, the seeded tag and template in triggers and
#   steps; createMessageBot: the seeded template, a media URL on a public name (an IP literal is
#   refused by the URL policy).
# setupProviderWebhooks needs a Cloud API account: its path is pinned to one on the fake provider.
# The seeded flows' graph (FLOW_GRAPH in scripts/fuzz/server.ts).
_FLOW = {
    "triggers": [{"id": "hello", "type": "message_received", "parameters": {}}],
    "nodes": [{"id": "greet", "type": "send_text", "parameters": {"text": "Hi!"}}],
    "connections": [{"from_node": "hello", "to_node": "greet"}],
}
_LABEL_LIMIT = {"text": 20, "email": 20, "phone": 20, "number": 20, "textarea": 20, "date": 40, "dropdown": 20, "radio": 30, "checkbox": 30, "opt_in": 120}
_WITH_OPTIONS = {"dropdown", "radio", "checkbox"}


def _new_number():
    return f"+4915190{next(_unique) + 10000:06d}"  # +49 151 numbers libphonenumber accepts


def _flow(body):
    for part in ("triggers", "nodes"):
        generated = body.get(part) if isinstance(body.get(part), list) else []
        first = generated[0] if generated and isinstance(generated[0], dict) else {}
        body[part] = [{**{k: v for k, v in first.items() if k in ("label", "position")}, **_FLOW[part][0]}]
    body["connections"] = json.loads(json.dumps(_FLOW["connections"]))


def _form_fields(fields):
    for i, f in enumerate(fields):
        if not isinstance(f, dict):
            continue
        f["name"] = f"f{i}_{str(f.get('name', ''))[:50]}"
        f["label"] = str(f.get("label") or "Field")[: _LABEL_LIMIT.get(f.get("type"), 20)]
        f.pop("custom_field", None)
        if f.get("type") in _WITH_OPTIONS:
            options = [o for o in (f.get("options") or []) if isinstance(o, dict)] or [{"title": "Yes"}]
            f["options"] = [{**o, "id": f"o{j}"} for j, o in enumerate(options)]
        else:
            f.pop("options", None)


def _segment_condition(c):
    operator = c.get("operator")
    c.pop("value", None)
    if operator in ("exists", "not_exists"):
        c["field"] = "email"
    elif operator == "within_days":
        c.update(field="last_inbound_at", value=7)
    elif operator in ("gt", "gte", "lt", "lte"):
        c.update(field="created_at", value="2026-01-01")
    else:
        c.update(field="name", value="Ann")


def _seeded_template(part):
    if isinstance(part, dict) and "template_id" in part:
        part["template_id"] = FIELDS.get("template_id")
        if "language" in part:
            part["language"] = "en_US"


def _messaging_fixed(case):
    if not FIELDS or not _positive(case):
        return case
    op = case.operation.definition.raw.get("operationId")
    body = case.body if isinstance(case.body, dict) else None
    if body is None:
        return case
    if op in ("createFlow", "updateFlow"):
        _flow(body)
        body.pop("version", None)
    elif op == "createContact":
        body["contact_no"] = _new_number()
        if isinstance(body.get("custom_fields"), dict):
            body["custom_fields"] = {"city": "Berlin"}
    elif op == "createContactImport":
        body["file"] = f"contact_no\n{_new_number()}\n".encode()
    elif op == "createForm" and isinstance(body.get("fields"), list):
        _form_fields(body["fields"])
    elif op == "createSegment" and isinstance(body.get("filter"), dict) and isinstance(body["filter"].get("conditions"), list):
        for c in body["filter"]["conditions"]:
            if isinstance(c, dict):
                _segment_condition(c)
    elif op == "createTemplate":
        body["name"] = f"fuzz_{next(_unique)}_{str(body.get('name', ''))[:400]}"
        body["language"] = "en_US"
        body["components"] = [{"type": "BODY", "text": "Hello from the fuzz run."}]
        if body.get("category") == "AUTHENTICATION":
            body["category"] = "UTILITY"
    elif op == "createCustomField":
        body["key"] = f"{str(body.get('key') or 'f')[:30]}_{next(_unique)}"
        if body.get("type") == "choice":
            body["choices"] = [f"choice {i}" for i in range(max(2, len(body.get("choices") or [])))]
        else:
            body.pop("choices", None)
    elif op == "createSequence":
        trigger = body.get("trigger") if isinstance(body.get("trigger"), dict) else {}
        if trigger.get("type") == "keyword":
            trigger["keyword"] = f"{str(trigger.get('keyword') or 'k')[:80]} {next(_unique)}"
        if trigger.get("type") == "tag_added":
            trigger["tag_id"] = FIELDS.get("tag_id")
        for step in body.get("steps") or []:
            _seeded_template(step)
    elif op == "createMessageBot" and isinstance(body.get("reply"), dict):
        reply = body["reply"]
        _seeded_template(reply)
        if reply.get("type") == "media":
            reply["media_url"] = "https://media.example/reply"
    elif op == "mapOrderWebhookTemplate":
        generated = [v for v in (body.get("variables") or []) if isinstance(v, dict)]
        body["variables"] = [{**(generated[0] if generated else {"source": "order.number"}), "target": "body.1"}]
    return case


@schemathesis.hook("before_call")
def messaging_before_call(context, case, kwargs):
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
    # Positive as a whole is not enough: the coverage phase marks a case positive with one
    # component (a header, say) made invalid on purpose, and its refusal is the right answer.
    if not _positive(case) or status < 400 or status >= 500 or status in ACCEPTED:
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
    if "error" in body and case.operation.path.startswith(("/api/oauth/", "/login/oidc/")):
        return None  # RFC 6749 §5.2 and RFC 7591 §3.2.2 errors (catalogue C14, O)
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
