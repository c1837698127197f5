"""Who may call the server: static bearer tokens and an OAuth2 client-credentials endpoint.

With neither configured every request is allowed. Otherwise every request but the token
endpoint needs ``Authorization: Bearer <token>`` with a configured token or one the token
endpoint issued and that has not expired; anything else is answered 401 before the catalog is
touched. The token endpoint (``POST /v1/oauth/tokens``, form encoded) grants
``client_credentials`` for a configured client id and secret, and ``token-exchange`` of a valid
token (how Java clients refresh). Tokens and secrets are compared in constant time as UTF-8
bytes (so non-ASCII ones work) and never logged. Each accepted token names a principal (a
static token itself, an issued one its client, through refreshes), to which an
``Idempotency-Key`` belongs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.exceptions import ValidationError

__all__ = ["Authenticator"]


def _basic(authorization: str | None) -> tuple[str, str] | None:
    """``(client id, secret)`` of an ``Authorization: Basic`` header (URL-decoded parts)."""
    import base64
    import binascii
    from urllib.parse import unquote

    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # ValueError: non-ASCII text, or not UTF-8
        return None
    client_id, sep, secret = text.partition(":")
    return (unquote(client_id), unquote(secret)) if sep else None


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes, for comparisons (lone surrogates kept, never an error)."""
    return text.encode("utf-8", "surrogatepass")


def _header_bytes(value: str) -> bytes:
    """The bytes of a header value: ASGI servers decode headers as Latin-1, so a UTF-8 token
    sent by a client is its Latin-1 encoding again (other text: its UTF-8)."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return _utf8(value)


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


class Authenticator:
    """Checks bearer tokens and issues OAuth2 tokens (see the module docstring)."""

    def __init__(
        self,
        tokens: Iterable[str] = (),
        clients: Mapping[str, str] | None = None,
        token_lifetime_s: int = 3600,
    ) -> None:
        if isinstance(token_lifetime_s, bool) or not isinstance(token_lifetime_s, int):
            raise ValidationError(f"token_lifetime_s must be an int, got {token_lifetime_s!r}")
        if token_lifetime_s < 1:
            raise ValidationError(
                f"token_lifetime_s must be at least one second, got {token_lifetime_s}"
            )
        self._static = [_utf8(t) for t in tokens if t]
        self._clients = dict(clients or {})
        self.token_lifetime_s = token_lifetime_s
        self._issued: dict[str, tuple[float, str]] = {}  # token -> (expiry, principal)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"Authenticator(tokens={len(self._static)}, clients={sorted(self._clients)}, "
            f"lifetime={self.token_lifetime_s}s)"
        )

    @property
    def enabled(self) -> bool:
        """Whether requests need a token."""
        return bool(self._static or self._clients)

    def valid(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header carries an acceptable bearer token."""
        return self.principal(authorization) is not None

    def principal(self, authorization: str | None) -> str | None:
        """Who an ``Authorization`` header authenticates (``""`` with auth off), or None.

        A static token is its own principal (as a digest); a token issued to a client names the
        client, and keeps naming it through token exchanges (refreshes)."""
        if not self.enabled:
            return ""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        return self._principal_of(_header_bytes(token.strip()))

    def _principal_of(self, token: bytes) -> str | None:
        """The principal of a token (its bytes), or None."""
        static = any(hmac.compare_digest(token, t) for t in self._static)
        with self._lock:
            now = time.monotonic()
            for t in [t for t, (exp, _) in self._issued.items() if exp < now]:
                del self._issued[t]
            # issued tokens are ASCII: anything else is none of them
            issued = self._issued.get(token.decode("ascii")) if token.isascii() else None
        if static:
            return "token:" + hashlib.sha256(token).hexdigest()
        return issued[1] if issued is not None else None

    def grant(
        self, form: Mapping[str, str], authorization: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Answer a token request: ``(200, token response)`` or ``(400/401, OAuth2 error)``.

        Client credentials come in the form (``client_secret_post``) or in an
        ``Authorization: Basic`` header (``client_secret_basic``).
        """
        grant_type = form.get("grant_type", "")
        if not grant_type:  # RFC 6749 5.2: a missing required parameter
            return 400, {"error": "invalid_request", "error_description": "grant_type is missing"}
        if grant_type == "client_credentials":
            client_id = form.get("client_id", "")
            secret = form.get("client_secret", "")
            basic = _basic(authorization)
            if basic is not None and not secret:
                client_id, secret = basic
            expected = self._clients.get(client_id)
            if expected is None or not hmac.compare_digest(_utf8(secret), _utf8(expected)):
                return 401, {"error": "invalid_client", "error_description": "bad credentials"}
            principal = f"client:{client_id}"
        elif grant_type == TOKEN_EXCHANGE:
            subject = self._principal_of(_utf8(form.get("subject_token", "")))
            if subject is None:
                return 401, {"error": "invalid_grant", "error_description": "bad subject token"}
            principal = subject
        else:
            return 400, {
                "error": "unsupported_grant_type",
                "error_description": f"grant type {grant_type!r} is not supported",
            }
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._issued[token] = (time.monotonic() + self.token_lifetime_s, principal)
        return 200, {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": self.token_lifetime_s,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
