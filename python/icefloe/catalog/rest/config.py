"""REST catalog properties, endpoint discovery and request paths.

After ``GET /v1/config`` the catalog's properties are ``defaults``, then the user's properties,
then ``overrides``. ``prefix`` goes into every path (``/v1/{prefix}/namespaces``); ``endpoints``
lists what the server implements (``"GET /v1/{prefix}/namespaces"``); without it a client
assumes the default set of the specification. Namespaces in paths are joined with the unit
separator 0x1F and percent-encoded.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, unquote

__all__ = [
    "DEFAULT_ENDPOINTS",
    "VIEW_ENDPOINTS",
    "Endpoint",
    "encode_namespace",
    "header_properties",
]

NAMESPACE_SEPARATOR = "\x1f"

Endpoint = str  # "METHOD /v1/{prefix}/path"

LIST_NAMESPACES = "GET /v1/{prefix}/namespaces"
CREATE_NAMESPACE = "POST /v1/{prefix}/namespaces"
LOAD_NAMESPACE = "GET /v1/{prefix}/namespaces/{namespace}"
NAMESPACE_EXISTS = "HEAD /v1/{prefix}/namespaces/{namespace}"
DROP_NAMESPACE = "DELETE /v1/{prefix}/namespaces/{namespace}"
UPDATE_NAMESPACE = "POST /v1/{prefix}/namespaces/{namespace}/properties"
LIST_TABLES = "GET /v1/{prefix}/namespaces/{namespace}/tables"
CREATE_TABLE = "POST /v1/{prefix}/namespaces/{namespace}/tables"
LOAD_TABLE = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"
TABLE_EXISTS = "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"
UPDATE_TABLE = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"
DROP_TABLE = "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}"
RENAME_TABLE = "POST /v1/{prefix}/tables/rename"
REGISTER_TABLE = "POST /v1/{prefix}/namespaces/{namespace}/register"
REPORT_METRICS = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics"
TABLE_CREDENTIALS = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"
COMMIT_TRANSACTION = "POST /v1/{prefix}/transactions/commit"
PLAN_TABLE_SCAN = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"
FETCH_PLAN = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}"
CANCEL_PLAN = "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}"
FETCH_SCAN_TASKS = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks"
LIST_VIEWS = "GET /v1/{prefix}/namespaces/{namespace}/views"
LOAD_VIEW = "GET /v1/{prefix}/namespaces/{namespace}/views/{view}"
VIEW_EXISTS = "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}"
DROP_VIEW = "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}"
CREATE_VIEW = "POST /v1/{prefix}/namespaces/{namespace}/views"
UPDATE_VIEW = "POST /v1/{prefix}/namespaces/{namespace}/views/{view}"
RENAME_VIEW = "POST /v1/{prefix}/views/rename"
REGISTER_VIEW = "POST /v1/{prefix}/namespaces/{namespace}/register-view"

#: What a client may assume when the server's config lists no ``endpoints``.
DEFAULT_ENDPOINTS: frozenset[Endpoint] = frozenset(
    {
        LIST_NAMESPACES,
        LOAD_NAMESPACE,
        CREATE_NAMESPACE,
        UPDATE_NAMESPACE,
        DROP_NAMESPACE,
        LIST_TABLES,
        LOAD_TABLE,
        CREATE_TABLE,
        UPDATE_TABLE,
        DROP_TABLE,
        RENAME_TABLE,
        REGISTER_TABLE,
        REPORT_METRICS,
        COMMIT_TRANSACTION,
    }
)
#: Added to the defaults when the config says ``view-endpoints-supported=true``.
VIEW_ENDPOINTS: frozenset[Endpoint] = frozenset(
    {LIST_VIEWS, LOAD_VIEW, CREATE_VIEW, UPDATE_VIEW, DROP_VIEW, RENAME_VIEW}
)


def encode_namespace(namespace: Iterable[str], separator: str = NAMESPACE_SEPARATOR) -> str:
    """A namespace as one path segment: parts joined by ``separator``, percent-encoded."""
    return quote(separator.join(namespace), safe="")


def namespace_separator(props: dict[str, str]) -> str:
    """The separator the server advertises (``namespace-separator``, URL-encoded), or 0x1F."""
    raw = props.get("namespace-separator")
    return unquote(raw) if raw else NAMESPACE_SEPARATOR


def encode_name(name: str) -> str:
    """A table or view name as one path segment."""
    return quote(name, safe="")


def header_properties(props: dict[str, str]) -> dict[str, str]:
    """Extra request headers from ``header.<Name>`` properties."""
    return {k[len("header.") :]: v for k, v in props.items() if k.startswith("header.") and k[7:]}


def endpoint_set(listed: object, view_endpoints: bool) -> frozenset[Endpoint]:
    """The endpoints a server supports, from its config's ``endpoints`` (None: the defaults)."""
    if isinstance(listed, list):
        return frozenset(" ".join(str(e).split()) for e in listed)
    return DEFAULT_ENDPOINTS | (VIEW_ENDPOINTS if view_endpoints else frozenset())
