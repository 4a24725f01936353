"""Authlib's OpenID Connect client against an app's issuer, unchanged (Authlib 1.9.6).

Reads ISSUER, CLIENT_ID, CLIENT_SECRET and REDIRECT_URI from the environment. Runs discovery,
builds the authorization URL with PKCE S256, state and nonce (printed as one JSON line), reads
the callback URL the browser came back to from stdin, exchanges the code with HTTP Basic,
validates the ID token with Authlib's JOSE against the published JWKS (iss, aud, exp, nonce),
reads userinfo, and prints one JSON line with what it got. Exits non-zero on any failure.
"""
import json
import os
import sys

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oidc.core import CodeIDToken

issuer = os.environ["ISSUER"]
client_id = os.environ["CLIENT_ID"]
client_secret = os.environ["CLIENT_SECRET"]
redirect_uri = os.environ["REDIRECT_URI"]

metadata = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
assert metadata["issuer"] == issuer, metadata["issuer"]

session = OAuth2Session(
    client_id,
    client_secret,
    scope="openid phone profile",
    redirect_uri=redirect_uri,
    code_challenge_method="S256",
    token_endpoint_auth_method="client_secret_basic",
)
verifier = generate_token(64)
nonce = generate_token(20)
url, state = session.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
print(json.dumps({"authorization_url": url}), flush=True)

callback = sys.stdin.readline().strip()
token = session.fetch_token(metadata["token_endpoint"], authorization_response=callback, state=state, code_verifier=verifier)

keys = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
claims = jwt.decode(
    token["id_token"],
    keys,
    claims_cls=CodeIDToken,
    claims_options={"iss": {"essential": True, "value": issuer}, "aud": {"essential": True, "value": client_id}},
    claims_params={"nonce": nonce, "client_id": client_id},
)
claims.validate()

userinfo = session.get(metadata["userinfo_endpoint"]).json()
assert userinfo["sub"] == claims["sub"], (userinfo, claims)
print(json.dumps({"claims": dict(claims), "userinfo": userinfo, "scope": token.get("scope")}), flush=True)
