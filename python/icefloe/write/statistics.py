"""Table statistics files: theta sketches of columns written as a Puffin file.

Each column becomes one ``apache-datasketches-theta-v1`` blob holding the compact sketch Iceberg
Java writes (see :class:`icefloe._native.ThetaSketch`), with the ``ndv`` property readers such as
Spark's cost-based optimiser and Trino use. The file goes to
``<metadata dir>/<snapshot id>-<uuid>.stats`` as Java names it; registering it in the table
metadata is the caller's job (:mod:`icefloe.table.statistics`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from icefloe._native import ThetaSketch, __version__
from icefloe.exceptions import ValidationError
from icefloe.io import FileIO
from icefloe.metadata import BlobMetadata, StatisticsFile
from icefloe.puffin import PuffinWriter
from icefloe.table_paths import metadata_location

__all__ = ["THETA_SKETCH_V1", "check_codec", "ndv_of", "write_statistics_file"]

THETA_SKETCH_V1 = "apache-datasketches-theta-v1"
"""Puffin blob type of a column's theta sketch."""
_CODECS = (None, "zstd")


def ndv_of(sketch: ThetaSketch) -> int:
    """The ``ndv`` property of a sketch's blob: its estimate truncated, as Java writes it."""
    return int(sketch.estimate())


def check_codec(compression_codec: str | None) -> None:
    """Refuses a blob codec other than zstd or none (Java cannot read LZ4 blobs)."""
    if compression_codec not in _CODECS:
        raise ValidationError(
            f"statistics blobs are compressed with 'zstd' or not at all, got {compression_codec!r}"
        )


def write_statistics_file(
    io: FileIO,
    table_location: str,
    table_properties: Mapping[str, str],
    snapshot_id: int,
    sequence_number: int,
    sketches: Mapping[int, ThetaSketch],
    *,
    compression_codec: str | None = "zstd",
) -> StatisticsFile:
    """Write one Puffin file with a theta-sketch blob per field id of ``sketches`` and return
    its ``statistics`` entry. ``compression_codec`` is ``"zstd"`` (Java's choice) or None; LZ4 is
    refused because Java cannot read it."""
    check_codec(compression_codec)
    writer = PuffinWriter()
    blobs: list[BlobMetadata] = []
    for field_id, sketch in sketches.items():
        props = {"ndv": str(ndv_of(sketch))}
        writer.add_blob(
            sketch.to_bytes(),
            THETA_SKETCH_V1,
            [field_id],
            snapshot_id,
            sequence_number,
            compression_codec,
            props,
        )
        blobs.append(
            BlobMetadata(THETA_SKETCH_V1, snapshot_id, sequence_number, (field_id,), props)
        )
    puffin = writer.finish({"created-by": f"icefloe {__version__}"})
    loc = metadata_location(table_location, table_properties)
    path = f"{loc}/{snapshot_id}-{uuid.uuid4()}.stats"
    io.new_output(path).write(puffin.data)
    return StatisticsFile(
        snapshot_id=snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(puffin.data),
        file_footer_size_in_bytes=puffin.footer_size,
        blob_metadata=tuple(blobs),
    )
