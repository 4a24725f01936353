"""Smoke program of openapi-generator's `python` clients with default options (package names only).

Run by scripts/gates/openapi-generator.mjs against a running server: lists contacts, uploads a
local image with upload_media, then sends it by its `media_id` with send_message (JSON), the way
a generated client sends media from the device; lists Connect documents with a bearer token;
starts a Login session. Input from the environment: CHATAPP_BASE_URL, MESSAGING_API_KEY,
CHATAPP_SENDER (a number of a connected account), CHATAPP_CONTACT (a contact whose 24-hour window
is open), CHATAPP_IMAGE, CONNECT_ACCESS_TOKEN, LOGIN_API_KEY. Exits non-zero naming the step on a
failure.
"""

import os
import sys

import chatapp_connect_oag as c
import chatapp_login_oag as lg
import chatapp_messaging_oag as m
from chatapp_messaging_oag.api.contacts_api import ContactsApi
from chatapp_messaging_oag.api.messages_api import MessagesApi
from chatapp_messaging_oag.exceptions import ApiException

REQUIRED = [
    "CHATAPP_BASE_URL",
    "MESSAGING_API_KEY",
    "CHATAPP_SENDER",
    "CHATAPP_CONTACT",
    "CHATAPP_IMAGE",
    "CONNECT_ACCESS_TOKEN",
    "LOGIN_API_KEY",
]


def step(name, call):
    try:
        return call()
    except (ApiException, c.ApiException, lg.ApiException) as error:
        sys.exit(f"FAIL {name}: HTTP {error.status} {str(error.body)[:300]}")


def main() -> None:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        sys.exit(f"FAIL missing environment: {', '.join(missing)}")
    env = os.environ
    # Messaging API keys go in X-API-Key (the ApiKeyHeader scheme).
    config = m.Configuration(host=env["CHATAPP_BASE_URL"], api_key={"ApiKeyHeader": env["MESSAGING_API_KEY"]})
    with m.ApiClient(config) as client:
        contacts = step("list contacts", lambda: ContactsApi(client).list_contacts(limit=10))
        print(f"messaging: listed {len(contacts.data)} contact(s): {', '.join(c.contact_no for c in contacts.data)}")

        messages = MessagesApi(client)
        with open(env["CHATAPP_IMAGE"], "rb") as f:
            image = (os.path.basename(env["CHATAPP_IMAGE"]), f.read())
        upload = step(
            "upload media", lambda: messages.upload_media(chatapp_phone_number=env["CHATAPP_SENDER"], file=image)
        )
        print(f"messaging: uploaded {image[0]} as {upload.id} ({upload.mime_type}, {upload.size_bytes} bytes)")
        body = m.SendMessageRequest(
            m.SendImageMessage(
                message_type="image",
                contact_no=env["CHATAPP_CONTACT"],
                chatapp_phone_number=env["CHATAPP_SENDER"],
                media_id=upload.id,
                message="A photo from the python client",
            )
        )
        sent = step("send by media_id", lambda: messages.send_message(body))
        print(f"messaging: sent {sent.id} (image, media {upload.id}), status {getattr(sent.status, 'value', sent.status)}")

    # Connect: the access token goes in Authorization: Bearer (the ConnectOAuth scheme).
    with c.ApiClient(c.Configuration(host=env["CHATAPP_BASE_URL"], access_token=env["CONNECT_ACCESS_TOKEN"])) as client:
        documents = step("list documents", lambda: c.DocumentsApi(client).list_documents(limit=10))
        print(f"connect: listed {len(documents.data)} document(s) with the bearer token")

    login_config = lg.Configuration(host=env["CHATAPP_BASE_URL"], api_key={"ApiKeyHeader": env["LOGIN_API_KEY"]})
    with lg.ApiClient(login_config) as client:
        started = step("start login", lambda: lg.LoginSessionsApi(client).start_login_session(lg.LoginSessionStart()))
        print(f"login: started {started.session_id} (code {started.login_code})")
    print("python smoke: OK")


if __name__ == "__main__":
    main()
