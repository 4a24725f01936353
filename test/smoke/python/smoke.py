"""Smoke program for the generated Python clients (npm run clients:python).

Against a running server: (1) lists contacts with a Messaging API key, (2) starts a login
with a Login app key and reads its status, (3) exchanges a Connect authorization code (with
its PKCE verifier) for tokens and makes one call with the access token. Input comes from the
environment (see REQUIRED); prints each step and exits non-zero on the first failure.

    .tools/python/bin/python test/smoke/python/smoke.py
"""

import base64
import os
import sys

from chatapp_connect import AuthenticatedClient as ConnectAuthClient
from chatapp_connect.api.documents import list_documents
from chatapp_connect.api.o_auth import create_token
from chatapp_connect.models import ListDocumentsResponse200, TokenRequest, TokenResponse
from chatapp_login import AuthenticatedClient as LoginClient
from chatapp_login.api.login_sessions import get_login_session_status, start_login_session
from chatapp_login.models import LoginSessionStart, LoginSessionStarted, LoginSessionStatus
from chatapp_messaging import AuthenticatedClient as MessagingClient
from chatapp_messaging.api.contacts import list_contacts
from chatapp_messaging.models import ListContactsResponse200

REQUIRED = [
    "CHATAPP_BASE_URL",
    "MESSAGING_API_KEY",
    "LOGIN_API_KEY",
    "CONNECT_CLIENT_ID",
    "CONNECT_CLIENT_SECRET",
    "CONNECT_CODE",
    "CONNECT_CODE_VERIFIER",
    "CONNECT_REDIRECT_URI",
]


def expect(response, model, step):
    """The parsed body when the answer is `model`; otherwise stops with the status and body."""
    if not isinstance(response.parsed, model):
        sys.exit(f"FAIL {step}: HTTP {int(response.status_code)} {response.content[:300]!r}")
    return response.parsed


def main() -> None:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        sys.exit(f"FAIL missing environment: {', '.join(missing)}")
    env = os.environ
    base_url = env["CHATAPP_BASE_URL"]

    # 1. Messaging: API keys go in X-API-Key (no prefix).
    with MessagingClient(
        base_url=base_url, token=env["MESSAGING_API_KEY"], prefix="", auth_header_name="X-API-Key"
    ) as client:
        page = expect(list_contacts.sync_detailed(client=client, limit=10), ListContactsResponse200, "list contacts")
        print(f"messaging: listed {len(page.data)} contact(s): {', '.join(c.contact_no for c in page.data)}")

    # 2. Login: start a session with the app's key, then read its status.
    with LoginClient(base_url=base_url, token=env["LOGIN_API_KEY"], prefix="", auth_header_name="X-API-Key") as client:
        started = expect(
            start_login_session.sync_detailed(client=client, body=LoginSessionStart()),
            LoginSessionStarted,
            "start login",
        )
        print(
            f"login: started {started.session_id} (code {started.login_code}, message {started.display_phone_number})"
        )
        status = expect(
            get_login_session_status.sync_detailed(started.session_id, client=client),
            LoginSessionStatus,
            "login status",
        )
        print(f"login: session {status.session_id} is {status.status.value}, expires {status.expires_at.isoformat()}")

    # 3. Connect: the client authenticates with HTTP Basic (RFC 6749 §2.3.1), so the body has no secret.
    basic = base64.b64encode(f"{env['CONNECT_CLIENT_ID']}:{env['CONNECT_CLIENT_SECRET']}".encode()).decode()
    with ConnectAuthClient(base_url=base_url, token=basic, prefix="Basic") as client:
        body = TokenRequest(
            grant_type="authorization_code",
            code=env["CONNECT_CODE"],
            redirect_uri=env["CONNECT_REDIRECT_URI"],
            code_verifier=env["CONNECT_CODE_VERIFIER"],
        )
        tokens = expect(create_token.sync_detailed(client=client, body=body), TokenResponse, "token exchange")
        print(
            f"connect: exchanged the code for {tokens.token_type} token (scope {tokens.scope!r}, workspace {tokens.org_id}, expires in {tokens.expires_in}s)"
        )
    with ConnectAuthClient(base_url=base_url, token=tokens.access_token) as client:
        documents = expect(list_documents.sync_detailed(client=client), ListDocumentsResponse200, "list documents")
        print(f"connect: listed {len(documents.data)} document(s) with the access token")
        print(f"ACCESS_TOKEN_PREFIX={tokens.access_token[:4]}")  # the kind only: never log a token

    print("python smoke: OK")


if __name__ == "__main__":
    main()
