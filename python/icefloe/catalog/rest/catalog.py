"""The REST catalog client: an icefloe :class:`~icefloe.catalog.Catalog` over Iceberg's REST API.

Properties: ``uri`` (the server, e.g. ``http://127.0.0.1:8181``), ``warehouse`` (sent to
``GET /v1/config``), auth (see :mod:`icefloe.catalog.rest.auth`), ``header.<Name>`` (extra
headers), ``rest.access-delegation`` (the ``X-Iceberg-Access-Delegation`` header; default
``vended-credentials``, empty to send none), SigV4 (see :mod:`icefloe.catalog.rest.sigv4`),
``rest-page-size``, ``snapshot-loading-mode``
(``all`` or ``refs``), ``rest.client.socket-timeout-ms`` (default 60000) and
``rest.client.max-connections`` (default 16) and ``rest-metrics-reporting-enabled`` (default
true: a commit report after each commit that adds a snapshot and a scan report after each scan
plan of a table loaded from this catalog, see :mod:`icefloe.catalog.rest.metrics`; they are
sent by a background thread, so neither waits for the server;
:attr:`RestCatalog.metrics_reports_sent` and ``metrics_reports_failed`` count both kinds once
sent, :meth:`RestCatalog.flush_reports` waits for the queued ones, ``close`` sends them).

A loaded table's FileIO renews vended credentials that carry an expiry through
``GET .../credentials`` before they expire (see :class:`icefloe.io.FileIO`).

A commit sends the table's requirements and updates; the server checks and applies them. A 409
means another writer moved the table: the table is reloaded and the requirements checked again
here; if they still hold the same changes are sent again (waiting as the table's
``commit.retry.*`` properties say), else :class:`CommitConflictError` lets the transaction
rebuild its changes on the new state. 500/502/503/504, timeouts and answers that are not the
catalog's (a body that is not an Iceberg error response: a gateway's page) raise
:class:`CommitStateUnknownError` (nothing is deleted) unless the table shows the commit's
snapshots; when the server advertises ``Idempotency-Key`` support the same request is retried
with the same key first.
"""

from __future__ import annotations

from icefloe.catalog.base import Identifier
from icefloe.catalog.rest.commits import RestCommits
from icefloe.catalog.rest.namespaces import RestNamespaces
from icefloe.catalog.rest.views import RestViews
from icefloe.exceptions import UnsupportedFeatureError
from icefloe.metadata import TableMetadata

__all__ = ["RestCatalog"]


class RestCatalog(RestCommits, RestNamespaces, RestViews):
    """A catalog served over Iceberg's REST protocol (see the module docstring)."""

    # -- primitives of file-based catalogs, which a REST catalog leaves to its server -----------
    def _create_entry(self, identifier: Identifier, metadata: TableMetadata) -> str:
        raise UnsupportedFeatureError("a REST catalog creates tables on its server")

    def _write_and_swap(
        self, identifier: Identifier, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> str:
        raise UnsupportedFeatureError("a REST catalog commits through its server")

    def _drop_entry(self, identifier: Identifier) -> None:
        self.drop_table(identifier)

    def _default_table_location(self, identifier: Identifier) -> str:
        raise UnsupportedFeatureError("a REST catalog's server chooses table locations")
