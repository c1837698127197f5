"""Keep the Iceberg side of a Delta table in sync while a Spark pipeline writes the Delta table.

::

    from icefloe.spark.delta_sync import DeltaSync

    sync = DeltaSync("/data/events", catalog=catalog, identifier="db.events")
    sync.write(df)                                   # a Delta append, then an incremental sync
    stream.writeStream.foreachBatch(sync.foreach_batch()).start()   # idempotent per batch
    sync.register(spark)       # or: any streaming query writing /data/events as Delta syncs
                               # after each of its micro-batches (a StreamingQueryListener)

Each sync is :func:`icefloe.delta.convert`: the first one converts the table in full, later
ones add one Iceberg snapshot per new Delta commit and a sync with nothing new does nothing.
Everything runs on the driver; the Delta writes are Spark's (Delta Lake's jars on the session).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from icefloe.catalog.base import Catalog
from icefloe.delta import ConvertResult, convert

__all__ = ["DeltaSync"]

log = logging.getLogger(__name__)


def _comparable(path: str) -> str:
    """A table location as sink descriptions and users spell it alike: a local one as an
    absolute path without ``file:`` (``file:///data/t``, ``file:/data/t`` and a relative path
    from the working directory, as Spark resolves it), others as given; no trailing slash."""
    for prefix in ("file://", "file:"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    else:
        if "://" in path:
            return path.rstrip("/")
    return os.path.normpath(os.path.abspath(path))


class DeltaSync:
    """Syncs the Iceberg table converted from the Delta table at ``delta_path``.

    The target is given as for :func:`icefloe.delta.convert` (``catalog`` + ``identifier``, or
    ``metadata_location``, default ``<delta_path>/_icefloe``); ``dv_mode``, ``check`` and
    ``properties`` are passed on. Syncs are serialised within the process.
    """

    def __init__(
        self,
        delta_path: str,
        *,
        catalog: Catalog | None = None,
        identifier: str | tuple[str, ...] | None = None,
        metadata_location: str | None = None,
        dv_mode: str = "puffin",
        check: bool = True,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.delta_path = delta_path.rstrip("/")
        self._kwargs: dict[str, Any] = {
            "catalog": catalog,
            "identifier": identifier,
            "metadata_location": metadata_location,
            "dv_mode": dv_mode,
            "check": check,
            "properties": properties,
        }
        self._lock = threading.Lock()
        #: The result of the latest sync, and the error of the latest failed listener sync.
        self.last_result: ConvertResult | None = None
        self.last_error: BaseException | None = None

    def sync(self) -> ConvertResult:
        """Bring the Iceberg table up to the Delta table's latest version."""
        with self._lock:
            result = convert(self.delta_path, **self._kwargs)
            self.last_result = result
            return result

    def write(
        self,
        df: Any,
        mode: str = "append",
        partition_by: list[str] | None = None,
        **options: str,
    ) -> ConvertResult:
        """Write ``df`` to the Delta table (``df.write.format("delta")``), then sync."""
        writer = df.write.format("delta").mode(mode)
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        for k, v in options.items():
            writer = writer.option(k, v)
        writer.save(self.delta_path)
        return self.sync()

    def foreach_batch(
        self, app_id: str | None = None, mode: str = "append", **options: str
    ) -> Callable[[Any, int], None]:
        """A ``writeStream.foreachBatch`` function that writes each micro-batch to the Delta
        table and syncs. The Delta write carries ``txnAppId``/``txnVersion`` (``app_id``,
        default the Delta path; the batch id), so a batch Spark replays after a failure is
        not written twice, and the sync that follows picks up whatever is new."""
        app = app_id or f"icefloe-delta-sync:{self.delta_path}"

        def write_batch(batch: Any, batch_id: int) -> None:
            self.write(batch, mode, None, txnAppId=app, txnVersion=str(batch_id), **options)

        return write_batch

    def listener(self) -> Any:
        """A ``StreamingQueryListener`` that syncs after every micro-batch of any streaming
        query whose sink is this Delta table, and when such a query stops. A failed sync
        cannot fail the query: it is logged and kept in :attr:`last_error`, and the next
        micro-batch's sync retries (each sync resumes where the last one stopped)."""
        from pyspark.sql.streaming.listener import StreamingQueryListener

        outer = self

        class _Listener(StreamingQueryListener):
            def __init__(self) -> None:
                self.queries: set[str] = set()

            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                progress = event.progress
                if progress.numInputRows == 0 and str(progress.id) not in self.queries:
                    return
                if not outer._writes_here(progress.sink.description):
                    return
                self.queries.add(str(progress.id))
                outer._sync_quietly()

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                if str(event.id) in self.queries:
                    self.queries.discard(str(event.id))
                    outer._sync_quietly()

        return _Listener()

    def register(self, spark: Any) -> Any:
        """Add :meth:`listener` to ``spark.streams``; returns it (for ``removeListener``)."""
        listener = self.listener()
        spark.streams.addListener(listener)
        return listener

    def _writes_here(self, sink: str) -> bool:
        """Whether a sink description (``DeltaSink[file:/data/events]``) names this table."""
        if not sink.startswith("DeltaSink[") or not sink.endswith("]"):
            return False
        return _comparable(sink[len("DeltaSink[") : -1]) == _comparable(self.delta_path)

    def _sync_quietly(self) -> None:
        try:
            self.sync()
            self.last_error = None
        except Exception as e:  # a listener cannot fail the query; the next sync retries
            self.last_error = e
            log.warning("syncing the Iceberg side of %s failed: %s", self.delta_path, e)
