"""What a web browser may not do to a REST catalog server: the requests a page makes a browser
send on its behalf are refused before routing.

The REST catalog serves API clients, which send neither ``Origin`` nor ``Sec-Fetch-Site``; a
page (any site the user visits, or one rebinding its DNS name to the server's address) sends
one of them, and must neither change nor read the catalog. A URL typed into the address bar
(``Sec-Fetch-Site: none``) is served. A POST body other than JSON (the token endpoint's form
aside) is refused too: a form or ``text/plain`` body is what a page can send without the
browser asking the server first. A server listening on a loopback address also refuses a
``Host`` that is not one of its names (:func:`allowed_hosts_for`): a rebound page's requests
name the page's host, even from browsers that send neither header on same-origin requests.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable, Mapping
from typing import Any

__all__ = ["JSON", "LOOPBACK_NAMES", "allowed_hosts_for", "browser_refusal", "host_name"]

#: The media type of the REST protocol's bodies.
JSON = "application/json"

#: Names of the loopback interface a local client may use in ``Host``.
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names a server listening on ``bind_host`` answers (lower case, no port),
    or None for any: a loopback address answers its loopback names and ``extra`` (for
    example the name a reverse proxy forwards), any other address every name unless
    ``extra`` names some."""
    names = {h.strip().lower().strip("[]") for h in extra if h.strip()}
    if _is_loopback(bind_host.strip("[]")):
        return frozenset({*LOOPBACK_NAMES, bind_host.lower().strip("[]"), *names})
    if names:
        return frozenset({bind_host.lower().strip("[]"), *names})
    return None


def host_name(value: str) -> str:
    """The host of a ``Host`` header value: lower case, without port or IPv6 brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") > 1:  # a bare IPv6 address, as some clients send it
        return value
    return value.partition(":")[0].rstrip(".")


def _host_allowed(host: str, allowed: Collection[str]) -> bool:
    return host in allowed or ("localhost" in allowed and _is_loopback(host))


def _media_type(value: str) -> str:
    return value.partition(";")[0].strip().lower()


def browser_refusal(
    scope: Mapping[str, Any], allowed_hosts: Collection[str] | None = None
) -> tuple[int, str, str] | None:
    """(status, error type, message) for a request a web browser sent on a web page's
    behalf (see the module docstring), else None. ``allowed_hosts`` (from
    :func:`allowed_hosts_for`; None: any) are the ``Host`` names served."""
    raw = scope.get("headers") or ()
    headers = {k.lower(): v for k, v in raw}
    origin = headers.get(b"origin")
    site = headers.get(b"sec-fetch-site", b"none").strip().lower()
    if origin is not None or site != b"none":
        return (
            403,
            "ForbiddenException",
            "requests from web pages are refused: this server serves REST catalog clients",
        )
    host = headers.get(b"host")
    if allowed_hosts is not None and host is not None:
        name = host_name(host.decode("latin-1"))
        if not _host_allowed(name, allowed_hosts):
            return (
                403,
                "ForbiddenException",
                f"this server does not answer to the name {name[:255]!r} (a server on a "
                "loopback address answers its loopback names and those given with "
                "--allowed-host)",
            )
    # every Content-Type sent (older DuckDB httpfs adds a second, octet-stream, after JSON)
    types = [_media_type(v.decode("latin-1")) for k, v in raw if k.lower() == b"content-type"]
    path = str(scope.get("path", "")).rstrip("/")
    json_body = any(
        t == JSON or (t.startswith("application/") and t.endswith("+json")) for t in types
    )
    if (
        scope.get("method") == "POST"
        and types
        and not json_body
        and not path.endswith("/oauth/tokens")
    ):
        return (
            415,
            "BadRequestException",
            f"request bodies are JSON (Content-Type: {JSON}), not {types[0] or 'empty'!r}",
        )
    return None
