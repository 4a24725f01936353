"""Smoke program of the installed Python wheels (.artifacts/clients/chatapp_*.whl).

Run by scripts/gates/client-artifacts.mjs in a clean venv where the wheels are installed. Against
a running server: lists contacts, uploads a local image (POST /api/chatapp/media), then sends it
by its `media_id` with the generated send_message, then the documented error branch (a wrong
key: ProblemDetails with `type_`). Input from the environment: CHATAPP_BASE_URL,
MESSAGING_API_KEY, CHATAPP_SENDER, CHATAPP_CONTACT, CHATAPP_IMAGE. Exits non-zero naming the step.
"""

import os
import sys

from chatapp_messaging import AuthenticatedClient
from chatapp_messaging.api.contacts import list_contacts
from chatapp_messaging.api.messages import send_message
from chatapp_messaging.models import (
    ListContactsResponse200,
    MediaUpload,
    SendImageMessage,
    SendImageMessageMessageType,
    SendMessageResult,
)

REQUIRED = ["CHATAPP_BASE_URL", "MESSAGING_API_KEY", "CHATAPP_SENDER", "CHATAPP_CONTACT", "CHATAPP_IMAGE"]


def expect(response, model, step):
    if not isinstance(response.parsed, model):
        sys.exit(f"FAIL {step}: HTTP {int(response.status_code)} {response.content[:300]!r}")
    return response.parsed


def main() -> None:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        sys.exit(f"FAIL missing environment: {', '.join(missing)}")
    env = os.environ
    with AuthenticatedClient(
        base_url=env["CHATAPP_BASE_URL"], token=env["MESSAGING_API_KEY"], prefix="", auth_header_name="X-API-Key"
    ) as client:
        page = expect(list_contacts.sync_detailed(client=client, limit=10), ListContactsResponse200, "list contacts")
        print(f"messaging: listed {len(page.data)} contact(s): {', '.join(c.contact_no for c in page.data)}")

        # The 3.1 document describes the file part by its encoding only, which openapi-python-client
        # 0.29 types as text: the upload goes through the client's own httpx session (same auth).
        name = os.path.basename(env["CHATAPP_IMAGE"])
        with open(env["CHATAPP_IMAGE"], "rb") as f:
            res = client.get_httpx_client().post(
                "/api/chatapp/media",
                data={"chatapp_phone_number": env["CHATAPP_SENDER"]},
                files={"file": (name, f.read(), "image/png")},
            )
        if res.status_code != 201:
            sys.exit(f"FAIL upload media: HTTP {res.status_code} {res.content[:300]!r}")
        upload = MediaUpload.from_dict(res.json())
        print(f"messaging: uploaded {name} as {upload.id} ({upload.mime_type}, {upload.size_bytes} bytes)")

        body = SendImageMessage(
            contact_no=env["CHATAPP_CONTACT"],
            chatapp_phone_number=env["CHATAPP_SENDER"],
            message_type=SendImageMessageMessageType.IMAGE,
            media_id=upload.id,
            message="A photo from the chatapp_messaging wheel",
        )
        sent = expect(send_message.sync_detailed(client=client, body=body), SendMessageResult, "send by media_id")
        print(f"messaging: sent {sent.id} (image, media {upload.id}), status {sent.status}")
    # docs/clients.md's error branch, as written: a refusal parses as ProblemDetails,
    # whose `type` field is `type_` (a Python builtin name).
    with AuthenticatedClient(base_url=env["CHATAPP_BASE_URL"], token="mk_not_a_key", prefix="", auth_header_name="X-API-Key") as client:
        res = list_contacts.sync_detailed(client=client, limit=10)
        if res.status_code == 200:
            sys.exit("FAIL error branch: a wrong key was accepted")
        print(res.status_code, res.parsed.type_, res.parsed.detail)
        if not str(res.parsed.type_).endswith("/unauthorized"):
            sys.exit(f"FAIL error branch: {res.parsed!r}")
    print("python wheel smoke: OK")


if __name__ == "__main__":
    main()
