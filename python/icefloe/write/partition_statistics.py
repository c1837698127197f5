"""Writing a partition statistics file: the rows as Parquet with the spec's field ids, at
``<metadata dir>/partition-stats-<snapshot id>-<uuid>.parquet`` as Iceberg Java names it, with
the ``iceberg.schema`` key Java's Parquet writer adds. Registering it in the table metadata is
the caller's job (:mod:`icefloe.table.partition_statistics`)."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.arrow_schema import FIELD_IDS_DIGEST_KEY, field_ids_digest, schema_to_arrow
from icefloe.exceptions import AlreadyExistsError
from icefloe.io import FileIO
from icefloe.metadata import PartitionStatisticsFile, TableMetadata
from icefloe.schema import Schema
from icefloe.table_paths import metadata_location
from icefloe.write.properties import ParquetOptions

__all__ = ["write_partition_statistics_file"]


def write_partition_statistics_file(
    io: FileIO, metadata: TableMetadata, snapshot_id: int, schema: Schema, rows: pa.Table
) -> PartitionStatisticsFile:
    """Write ``rows`` (already in ``schema``'s Arrow form and order) and return the entry."""
    target = schema_to_arrow(schema)
    rows = rows.select(target.names).cast(target)
    path = (
        f"{metadata_location(metadata.location, metadata.properties)}/"
        f"partition-stats-{snapshot_id}-{uuid.uuid4()}.parquet"
    )
    opts = ParquetOptions.from_properties(metadata.properties)
    try:
        # an I/O failure is a FileIOError, and leaves no incomplete upload behind
        with io.new_output(path).writing() as sink:
            with pq.ParquetWriter(
                sink,
                target,
                compression=opts.compression,
                compression_level=opts.compression_level,
                write_statistics=True,
                store_schema=False,
                write_page_checksum=True,
                store_decimal_as_integer=True,  # as data files (the spec's Parquet types)
            ) as w:
                w.write_table(rows)
                w.add_key_value_metadata(
                    {
                        "iceberg.schema": json.dumps(schema.to_json(), separators=(",", ":")),
                        FIELD_IDS_DIGEST_KEY: field_ids_digest(target),
                    }
                )
            size = sink.tell()
    except AlreadyExistsError:
        raise  # not ours
    except BaseException:
        io.delete_quietly(path)  # a partial file
        raise
    return PartitionStatisticsFile(snapshot_id, path, size)
