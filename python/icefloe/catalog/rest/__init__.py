"""The Iceberg REST catalog client (``type: rest``): :class:`RestCatalog`.

Small modules: :mod:`~icefloe.catalog.rest.http` (pooled HTTP on the standard library),
:mod:`~icefloe.catalog.rest.auth` (bearer token, OAuth2 client credentials),
:mod:`~icefloe.catalog.rest.config` (endpoints and paths), :mod:`~icefloe.catalog.rest.errors`
(error bodies <-> exceptions), :mod:`~icefloe.catalog.rest.wire` (JSON shapes),
:mod:`~icefloe.catalog.rest.metrics` (commit and scan reports), and the catalog in layers:
:mod:`~icefloe.catalog.rest.client` (configuration and requests),
:mod:`~icefloe.catalog.rest.namespaces`, :mod:`~icefloe.catalog.rest.tables`,
:mod:`~icefloe.catalog.rest.commits`, :mod:`~icefloe.catalog.rest.views`, joined in
:mod:`~icefloe.catalog.rest.catalog`.
"""

from icefloe.catalog.rest.catalog import RestCatalog

__all__ = ["RestCatalog"]
