"""AWS Signature Version 4 for REST catalog requests (``rest.sigv4-enabled``).

Properties: ``rest.signing-region`` (required), ``rest.signing-name`` (default
``execute-api``), and credentials in ``rest.access-key-id`` / ``rest.secret-access-key`` /
``rest.session-token`` (else the ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN`` environment variables). Every header sent is signed, with
``X-Amz-Date``, ``X-Amz-Content-SHA256`` and (with a session token) ``X-Amz-Security-Token``
added; the path is URI-encoded once more, as for every AWS service but S3. A bearer token of
another auth manager moves to ``Original-Authorization``, as Iceberg Java's signer does.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
from collections.abc import Mapping
from urllib.parse import quote, unquote, urlsplit

from icefloe.exceptions import ValidationError

__all__ = ["SigV4Signer", "signer_from_properties"]

_UNSIGNED = {"user-agent", "expect", "x-amzn-trace-id", "authorization"}


class SigV4Signer:
    """Signs requests for ``service`` in ``region`` with static or session credentials."""

    def __init__(
        self,
        region: str,
        service: str,
        access_key_id: str,
        secret_access_key: str,
        session_token: str | None = None,
    ) -> None:
        self.region = region
        self.service = service
        self._key_id = access_key_id
        self._secret = secret_access_key
        self._token = session_token

    def __repr__(self) -> str:
        return f"SigV4Signer(region={self.region!r}, service={self.service!r})"

    def sign(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        now: datetime.datetime | None = None,
    ) -> dict[str, str]:
        """``headers`` plus ``Host``, the ``X-Amz-*`` headers and ``Authorization``."""
        parts = urlsplit(url)
        moment = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(
            datetime.timezone.utc
        )
        amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
        day = moment.strftime("%Y%m%d")
        payload = hashlib.sha256(body or b"").hexdigest()
        out = {k: v for k, v in headers.items() if k.lower() != "host"}
        original = next((v for k, v in out.items() if k.lower() == "authorization"), None)
        out = {k: v for k, v in out.items() if k.lower() != "authorization"}
        if original is not None:
            out["Original-Authorization"] = original
        out["Host"] = parts.netloc
        out["X-Amz-Date"] = amz_date
        out["X-Amz-Content-SHA256"] = payload
        if self._token:
            out["X-Amz-Security-Token"] = self._token
        signed = {
            k.lower(): " ".join(str(v).split())
            for k, v in out.items()
            if k.lower() not in _UNSIGNED
        }
        names = sorted(signed)
        canonical_headers = "".join(f"{n}:{signed[n]}\n" for n in names)
        signed_headers = ";".join(names)
        path = quote(parts.path or "/", safe="/~")
        pairs = sorted(
            (quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
            for k, _, v in (p.partition("=") for p in parts.query.split("&") if p)
        )
        query = "&".join(f"{k}={v}" for k, v in pairs)
        canonical = "\n".join(
            [method.upper(), path, query, canonical_headers, signed_headers, payload]
        )
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        key = f"AWS4{self._secret}".encode()
        for part in (day, self.region, self.service, "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        out["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self._key_id}/{scope}, "
            f"SignedHeaders={signed_headers}, Signature={signature}"
        )
        return out


def signer_from_properties(props: Mapping[str, str]) -> SigV4Signer | None:
    """The signer the properties ask for (``rest.sigv4-enabled=true``), or None."""
    enabled = props.get("rest.sigv4-enabled", "false").lower() == "true"
    if not enabled and props.get("rest.auth.type", "").lower() != "sigv4":
        return None
    region = props.get("rest.signing-region") or props.get("client.region")
    if not region:
        raise ValidationError("SigV4 signing needs 'rest.signing-region'")
    key_id = props.get("rest.access-key-id") or os.environ.get("AWS_ACCESS_KEY_ID")
    secret = props.get("rest.secret-access-key") or os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key_id or not secret:
        raise ValidationError(
            "SigV4 signing needs 'rest.access-key-id' and 'rest.secret-access-key' "
            "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )
    token = props.get("rest.session-token") or os.environ.get("AWS_SESSION_TOKEN")
    return SigV4Signer(region, props.get("rest.signing-name", "execute-api"), key_id, secret, token)
