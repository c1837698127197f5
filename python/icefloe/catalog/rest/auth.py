"""Authentication of REST catalog requests: none, a static bearer token, OAuth2 client credentials.

Properties (as in Iceberg's Java and Python clients): ``token`` (a bearer token used as is);
``credential`` (``client_id:client_secret``, or only a secret) with ``oauth2-server-uri`` (the
token endpoint; default ``<uri>/v1/oauth/tokens``), ``scope`` (default ``catalog``), ``audience``
and ``resource``; ``rest.auth.type`` (``none``, ``bearer`` or ``oauth2``) overrides the choice
made from the keys present. An OAuth2 token is fetched on first use, fetched again shortly before
it expires (``expires_in``), and after the server answered 401 or 419. Secrets appear in no repr,
log line or error message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from urllib.parse import urlencode

from icefloe.catalog.rest.errors import exception_for_error
from icefloe.catalog.rest.http import HttpSession
from icefloe.exceptions import UnauthorizedError, ValidationError
from icefloe.filesystems import secret_values

__all__ = ["AuthManager", "BearerAuth", "NoAuth", "OAuth2ClientCredentials", "auth_from_properties"]

DEFAULT_SCOPE = "catalog"
DEFAULT_EXPIRES_S = 3600.0


class AuthManager:
    """Adds credentials to requests; :meth:`invalidate` after a 401 says whether to retry."""

    def headers(self) -> dict[str, str]:
        """Headers to add to a request."""
        return {}

    def invalidate(self) -> bool:
        """Forget the current credentials; true when new ones can be obtained (retry once)."""
        return False

    def secrets(self) -> list[str]:
        """The secrets held (tokens, a client secret), kept out of error messages."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NoAuth(AuthManager):
    """No credentials."""


class BearerAuth(AuthManager):
    """A static bearer token."""

    def __init__(self, token: str) -> None:
        self._token = token.strip()  # a token file's line break is not part of the token

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    def secrets(self) -> list[str]:
        return [self._token]


class OAuth2ClientCredentials(AuthManager):
    """Tokens from an OAuth2 token endpoint with the ``client_credentials`` grant."""

    def __init__(
        self,
        session: HttpSession,
        token_url: str,
        client_id: str | None,
        client_secret: str,
        scope: str = DEFAULT_SCOPE,
        audience: str | None = None,
        resource: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        self._session = session
        self.token_url = token_url
        self._client_id = client_id
        self._secret = client_secret
        self.scope = scope
        self._audience = audience
        self._resource = resource
        self._extra = dict(extra_headers or {})
        self._token: str | None = None
        self._former: str | None = None  # the token before, which an answer may still echo
        self._refresh_at = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OAuth2ClientCredentials(token_url={self.token_url!r}, scope={self.scope!r})"

    def _fetch(self) -> None:
        form = {"grant_type": "client_credentials", "client_secret": self._secret}
        if self._client_id:
            form["client_id"] = self._client_id
        if self.scope:
            form["scope"] = self.scope
        if self._audience:
            form["audience"] = self._audience
        if self._resource:
            form["resource"] = self._resource
        resp = self._session.request(
            "POST",
            "",
            body=urlencode(form).encode(),
            headers={**self._extra, "Content-Type": "application/x-www-form-urlencoded"},
            absolute_url=self.token_url,
        )
        if resp.status != 200:
            # a token endpoint (or a proxy) may echo what it was sent: never the secrets
            exc = exception_for_error(
                resp.status,
                resp.body,
                "OAuth2 token request",
                secrets=[*self.secrets(), *secret_values(self._extra)],
            )
            if resp.status in (400, 401, 403):
                raise UnauthorizedError(str(exc))
            raise exc
        body = resp.json()
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise UnauthorizedError("OAuth2 token response has no access_token")
        try:
            lifetime = float(body.get("expires_in") or DEFAULT_EXPIRES_S)
        except (TypeError, ValueError):
            lifetime = DEFAULT_EXPIRES_S
        # Refresh ahead of expiry: a tenth of the lifetime early, between 1 s and 5 minutes.
        margin = min(300.0, max(1.0, lifetime / 10))
        self._former = self._token or self._former
        self._token = token
        self._refresh_at = time.monotonic() + max(0.0, lifetime - margin)

    def headers(self) -> dict[str, str]:
        with self._lock:
            if self._token is None or time.monotonic() >= self._refresh_at:
                self._fetch()
            return {"Authorization": f"Bearer {self._token}"}

    def invalidate(self) -> bool:
        with self._lock:
            self._former = self._token or self._former
            self._token = None
        return True

    def secrets(self) -> list[str]:
        return [s for s in (self._secret, self._token, self._former) if s]


def auth_from_properties(
    props: Mapping[str, str], session: HttpSession, extra_headers: Mapping[str, str]
) -> AuthManager:
    """The auth manager the catalog properties describe."""
    kind = (props.get("rest.auth.type") or "").lower()
    if not kind:
        kind = "oauth2" if props.get("credential") else "bearer" if props.get("token") else "none"
    if kind in ("none", "sigv4"):  # SigV4 signs each request (icefloe.catalog.rest.sigv4)
        return NoAuth()
    if kind == "bearer":
        token = props.get("token")
        if not token:
            raise ValidationError("rest.auth.type=bearer needs a 'token' property")
        return BearerAuth(token)
    if kind == "oauth2":
        credential = (props.get("credential") or "").strip()  # a file's line break
        if not credential:
            if props.get("token"):
                return BearerAuth(props["token"])
            raise ValidationError("rest.auth.type=oauth2 needs a 'credential' property")
        client_id, sep, secret = credential.partition(":")
        if not sep:
            client_id, secret = "", credential
        url = props.get("oauth2-server-uri") or session.url("/v1/oauth/tokens")
        return OAuth2ClientCredentials(
            session,
            url,
            client_id or None,
            secret,
            props.get("scope", DEFAULT_SCOPE),
            props.get("audience"),
            props.get("resource"),
            extra_headers,
        )
    raise ValidationError(
        f"unsupported rest.auth.type {kind!r} (use 'none', 'bearer', 'oauth2' or 'sigv4')"
    )
