"""Table operations of the REST catalog: list, load (ETag/304 cache, snapshot loading
mode), exists, create (staged too), storage credentials, drop, rename, register; a loaded
table's FileIO renews vended credentials through ``GET .../credentials``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from icefloe.arrow_schema import to_schema
from icefloe.catalog.base import Identifier, check_table_identifier, to_identifier
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.scan_planning import RestScanPlanning
from icefloe.catalog.rest.wire import (
    LoadTableResult,
    answer_object,
    identifier_from_json,
    identifier_to_json,
    longest_prefix_config,
    storage_credentials_from_json,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.io import FileIO
    from icefloe.metadata import TableMetadata
    from icefloe.partitioning import PartitionSpec
    from icefloe.schema import Schema
    from icefloe.sorting import SortOrder
    from icefloe.table import Table, Transaction

__all__ = ["RestTables"]


class RestTables(RestScanPlanning):
    """Tables over REST."""

    def _result_table(self, ident: Identifier, result: LoadTableResult) -> Table:
        from icefloe.table import Table

        io = self._result_io(ident, result)
        self._remember_planning_mode(ident, result.config)
        return Table(ident, result.metadata, result.metadata_location or "", io, self)

    def _result_io(self, ident: Identifier, result: LoadTableResult) -> FileIO:
        """The FileIO of a loaded table: its config and vended credentials, renewed through
        ``GET .../credentials`` when the server offers it."""
        location = result.metadata.location
        refresh = refresh_all = None
        if ep.TABLE_CREDENTIALS in self.endpoints and result.storage_credentials:

            def refresh_all() -> list[tuple[str, dict[str, str]]]:
                return self.load_credentials(ident)

            def refresh() -> Mapping[str, str]:  # vended credentials about to expire
                return longest_prefix_config(location, refresh_all())

        # the table location's own credentials are the FileIO's (renewed by ``refresh``);
        # the other prefixes serve the files under them (data elsewhere, say), the longest
        # prefix a file starts with winning, the table location's too
        own = max(
            (p for p, _ in result.storage_credentials if location.startswith(p)),
            key=len,
            default=None,
        )
        return self.table_io(
            result.io_properties(),
            refresh_credentials=refresh,
            storage_credentials=result.storage_credentials,
            refresh_storage_credentials=refresh_all,
            own_prefix=own,
        )

    def list_tables(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the tables in ``namespace`` (all pages)."""
        self._require(ep.LIST_TABLES)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        found = self._paged(
            f"{self._ns_path(ns)}/tables", f"list tables of {'.'.join(ns)!r}", "identifiers", {}
        )
        return [identifier_from_json(i) for i in found]

    def _load_result(self, ident: Identifier, mode: str | None = None) -> LoadTableResult:
        self._require(ep.LOAD_TABLE)
        mode = mode or self._snapshots
        headers = {}
        with self._etag_lock:
            cached = self._etags.get(ident)
        if cached is not None and mode == "all":
            headers["If-None-Match"] = cached[0]
        resp = self._call(
            "GET",
            self._table_path(ident),
            f"load table {'.'.join(ident)!r}",
            ok=(200, 304),
            query={"snapshots": mode},
            headers=headers,
        )
        if resp.status == 304 and cached is not None:
            return cached[1]
        result = LoadTableResult.from_json(resp.json())
        etag = resp.headers.get("etag")
        if etag and mode == "all":
            with self._etag_lock:
                self._etags[ident] = (etag, result)
        return result

    def load_every_snapshot(self, table: Table) -> TableMetadata | None:
        """With ``snapshot-loading-mode=refs``, the table's metadata with every snapshot
        (``?snapshots=all``), for time travel to snapshots no ref points at."""
        if self._snapshots != "refs" or not table.metadata_location:
            return None
        full = self._load_result(table.identifier, "all").metadata
        known = {s.snapshot_id: s for s in table.metadata.snapshots}
        if all(s.snapshot_id in known for s in full.snapshots):
            return None
        # the server's order (by commit), then any it no longer has (committed-away since)
        served = {s.snapshot_id for s in full.snapshots}
        ordered = tuple(known.get(s.snapshot_id, s) for s in full.snapshots)
        gone = tuple(s for s in table.metadata.snapshots if s.snapshot_id not in served)
        # the statistics of the left-out snapshots were left out with them
        return replace(
            table.metadata,
            snapshots=(*ordered, *gone),
            statistics=_merged(table.metadata.statistics, full.statistics),
            partition_statistics=_merged(
                table.metadata.partition_statistics, full.partition_statistics
            ),
        )

    def load_table(self, identifier: str | Iterable[str]) -> Table:
        """The table's current state (a 304 for an unchanged ETag reuses the cached answer)."""
        ident = self._table_identifier(identifier)
        return self._result_table(ident, self._load_result(ident))

    def _current_location(self, identifier: Identifier) -> str:
        return self._load_result(identifier).metadata_location or ""

    def table_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the table exists (HEAD, or GET when the server lists no HEAD)."""
        ident = self._table_identifier(identifier)
        method = "HEAD" if ep.TABLE_EXISTS in self.endpoints else "GET"
        resp = self._send(method, self._table_path(ident))
        if resp.status == 404:
            return False
        if resp.status not in (200, 204):
            raise self._error(resp, f"table {'.'.join(ident)!r}")
        return True

    def _create_request(
        self,
        ident: Identifier,
        schema: Schema | pa.Schema,
        location: str | None,
        partition_spec: PartitionSpec | None,
        sort_order: SortOrder | None,
        properties: Mapping[str, str] | None,
        format_version: int | None,
        stage: bool,
    ) -> LoadTableResult:
        from icefloe.metadata.create import check_create_args, requested_format_version
        from icefloe.nesting import check_nesting

        check_create_args(partition_spec, sort_order, properties, location)
        check_table_identifier(ident, dots=True)  # a new name, before any request
        self._require(ep.CREATE_TABLE)
        props = dict(properties or {})
        if format_version is not None:
            props["format-version"] = str(requested_format_version(format_version, props))
        table_schema = to_schema(schema)
        check_nesting(table_schema, "cannot create the table")
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": table_schema.to_json(),
            "stage-create": stage,
            "properties": props,
        }
        if location:
            body["location"] = location
        if partition_spec is not None:
            body["partition-spec"] = partition_spec.to_json()
        if sort_order is not None:
            body["write-order"] = sort_order.to_json()
        resp = self._call(
            "POST",
            f"{self._ns_path(ident[:-1])}/tables",
            f"create table {'.'.join(ident)!r}",
            body=body,
            mutation=True,
        )
        return LoadTableResult.from_json(resp.json())

    def create_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Table:
        """Create a table on the server (it assigns fresh field ids and the location)."""
        ident = self._table_identifier(identifier)
        result = self._create_request(
            ident, schema, location, partition_spec, sort_order, properties, format_version, False
        )
        return self._result_table(ident, result)

    def create_table_transaction(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Transaction:
        """A transaction that creates the table when it commits (a staged create).

        Nothing exists until :meth:`Transaction.commit_transaction`; the commit then creates
        the table with every change of the transaction (for example its first append) at
        once, or fails with :class:`TableAlreadyExistsError` if the name was taken meanwhile.
        """
        from icefloe.table import Transaction

        ident = self._table_identifier(identifier)
        result = self._create_request(
            ident, schema, location, partition_spec, sort_order, properties, format_version, True
        )
        return Transaction(self._result_table(ident, result))

    def load_credentials(self, identifier: str | Iterable[str]) -> list[tuple[str, dict[str, str]]]:
        """The table's storage credentials now (``GET .../credentials``): ``(prefix, config)``
        pairs, for example to renew vended credentials that are about to expire."""
        self._require(ep.TABLE_CREDENTIALS)
        ident = self._table_identifier(identifier)
        what = f"credentials of {'.'.join(ident)!r}"
        body = self._call("GET", f"{self._table_path(ident)}/credentials", what).json()
        return storage_credentials_from_json(answer_object(body, what).get("storage-credentials"))

    def drop_table(self, identifier: str | Iterable[str], purge: bool = False) -> None:
        """Drop the table; with ``purge`` the server also deletes its files."""
        self._require(ep.DROP_TABLE)
        ident = self._table_identifier(identifier)
        query = {"purgeRequested": "true"} if purge else {}
        self._call(
            "DELETE",
            self._table_path(ident),
            f"drop table {'.'.join(ident)!r}",
            query=query,
            mutation=True,
        )
        with self._etag_lock:
            self._etags.pop(ident, None)

    def _rename_table_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        """Rename a table on the server."""
        self._require(ep.RENAME_TABLE)
        src = self._table_identifier(source)
        dst = check_table_identifier(self._table_identifier(target), dots=True)
        self._call(
            "POST",
            f"{self._prefix}/tables/rename",
            f"rename table {'.'.join(src)!r} to {'.'.join(dst)!r}",
            body={"source": identifier_to_json(src), "destination": identifier_to_json(dst)},
            mutation=True,
        )
        with self._etag_lock:
            self._etags.pop(src, None)
        return dst

    def register_table(self, identifier: str | Iterable[str], metadata_location: str) -> Table:
        """Register an existing metadata file as a table."""
        self._require(ep.REGISTER_TABLE)
        ident = check_table_identifier(self._table_identifier(identifier), dots=True)
        metadata_location = self._registered_location(metadata_location)
        resp = self._call(
            "POST",
            f"{self._ns_path(ident[:-1])}/register",
            f"register table {'.'.join(ident)!r}",
            body={"name": ident[-1], "metadata-location": metadata_location},
            mutation=True,
        )
        return self._result_table(ident, LoadTableResult.from_json(resp.json()))


def _merged(mine: tuple[Any, ...], served: tuple[Any, ...]) -> tuple[Any, ...]:
    """``mine`` plus the statistics files of ``served`` for snapshots ``mine`` has none of."""
    have = {f.snapshot_id for f in mine}
    return (*mine, *(f for f in served if f.snapshot_id not in have))
