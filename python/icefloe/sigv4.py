"""AWS Signature Version 4 (header signing) over the standard library.

Used by :mod:`icefloe.s3client` for the S3 requests pyarrow cannot make (conditional ``PUT``,
batched ``DeleteObjects``). :func:`sign_headers` returns the headers to add to a request; the
intermediate :func:`canonical_request` and :func:`string_to_sign` are exposed so tests can compare
them with AWS's published vectors line by line.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import parse_qsl, quote, unquote, urlsplit

__all__ = [
    "EMPTY_SHA256",
    "UNSIGNED_PAYLOAD",
    "Credentials",
    "canonical_request",
    "sign_headers",
    "string_to_sign",
]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
ALGORITHM = "AWS4-HMAC-SHA256"


@dataclass(frozen=True)
class Credentials:
    """An access key pair with an optional session token; the repr shows neither secret."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def __repr__(self) -> str:
        token = ", session_token=***" if self.session_token else ""
        return f"Credentials(access_key_id={_mask(self.access_key_id)!r}, secret=***{token})"


def _mask(key: str) -> str:
    return key[:4] + "***" if len(key) > 8 else "***"


def _encode(text: str, safe: str = "") -> str:
    """RFC 3986 percent-encoding with AWS's unreserved set (``A-Za-z0-9-_.~``)."""
    return quote(text, safe=safe + "-_.~")


def _canonical_query(query: str) -> str:
    pairs = [(_encode(k), _encode(v)) for k, v in parse_qsl(query, keep_blank_values=True)]
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def _canonical_headers(headers: Mapping[str, str]) -> tuple[str, str]:
    canon: dict[str, str] = {}
    for name, value in headers.items():
        key = name.strip().lower()
        cleaned = " ".join(str(value).split())
        canon[key] = f"{canon[key]},{cleaned}" if key in canon else cleaned
    names = sorted(canon)
    return "".join(f"{n}:{canon[n]}\n" for n in names), ";".join(names)


def canonical_request(
    method: str, url: str, headers: Mapping[str, str], payload_hash: str
) -> tuple[str, str]:
    """The canonical request and its signed-header list for ``headers`` (which include host).

    The path (raw, or percent-encoded as sent) is percent-encoded once, as S3 expects: it is
    neither normalised nor encoded twice.
    """
    parts = urlsplit(url)
    path = _encode(unquote(parts.path or "/"), safe="/")
    header_block, signed = _canonical_headers(headers)
    text = "\n".join(
        (method.upper(), path, _canonical_query(parts.query), header_block, signed, payload_hash)
    )
    return text, signed


def _scope(amz_date: str, region: str, service: str) -> str:
    return f"{amz_date[:8]}/{region}/{service}/aws4_request"


def string_to_sign(canonical: str, amz_date: str, region: str, service: str) -> str:
    """The string to sign of a canonical request."""
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return f"{ALGORITHM}\n{amz_date}\n{_scope(amz_date, region, service)}\n{digest}"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret}".encode(), day)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def sign_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    payload_hash: str,
    credentials: Credentials,
    region: str,
    service: str = "s3",
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers to send: ``headers`` plus ``host``, ``x-amz-date``, the session token (when
    there is one) and ``Authorization``. Every header passed in is signed."""
    when = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    out = {k.lower(): v for k, v in headers.items()}
    out.setdefault("host", urlsplit(url).netloc)
    amz_date = out.setdefault("x-amz-date", when.strftime("%Y%m%dT%H%M%SZ"))
    if credentials.session_token:
        out["x-amz-security-token"] = credentials.session_token
    canonical, signed = canonical_request(method, url, out, payload_hash)
    to_sign = string_to_sign(canonical, amz_date, region, service)
    key = _signing_key(credentials.secret_access_key, amz_date[:8], region, service)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/"
        f"{_scope(amz_date, region, service)}, SignedHeaders={signed}, Signature={signature}"
    )
    return out
