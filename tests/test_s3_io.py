"""FileIO against real S3-compatible servers (moto and s3proxy on loopback ports)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _s3 import S3Server
from icefloe.exceptions import AlreadyExistsError, NotFoundError
from icefloe.io import FileIO

pytestmark = pytest.mark.s3


def test_write_read_list_delete(s3_server: S3Server) -> None:
    io = FileIO(s3_server.properties())
    base = s3_server.fresh_location()
    io.new_output(f"{base}/a/x.bin").write(b"hello")
    io.new_output(f"{base}/a/b/y.bin").write(b"world!")
    assert io.exists(f"{base}/a/x.bin") and not io.exists(f"{base}/a/z.bin")
    assert io.new_input(f"{base}/a/x.bin").read() == b"hello"
    assert io.new_input(f"{base}/a/b/y.bin").length() == 6
    with io.new_input(f"{base}/a/b/y.bin").open() as f:
        f.seek(2)
        assert f.read(3) == b"rld"
    listed = sorted((f.location, f.size) for f in io.list_prefix(f"{base}/a"))
    assert listed == [(f"{base}/a/b/y.bin", 6), (f"{base}/a/x.bin", 5)]
    assert io.list_dir(f"{base}/a") == [("b", True), ("x.bin", False)]
    with pytest.raises(AlreadyExistsError, match=r"a/x\.bin"):
        io.new_output(f"{base}/a/x.bin").write(b"again")
    io.new_output(f"{base}/a/x.bin").write(b"again", overwrite=True)
    assert io.new_input(f"{base}/a/x.bin").read() == b"again"
    io.delete(f"{base}/a/x.bin")
    assert not io.exists(f"{base}/a/x.bin")
    with pytest.raises(NotFoundError, match=r"a/x\.bin"):
        io.new_input(f"{base}/a/x.bin").read()
    # The object really is on the server: an independent client sees it.
    key = f"{base}/a/b/y.bin".split("/", 3)[3]
    got = s3_server.client().get_object(Bucket=s3_server.bucket(), Key=key)["Body"].read()
    assert got == b"world!"


def test_parquet_round_trip(s3_server: S3Server) -> None:
    io = FileIO(s3_server.properties())
    location = f"{s3_server.fresh_location()}/t.parquet"
    table = pa.table({"a": list(range(1000)), "b": [str(i) for i in range(1000)]})
    with io.new_output(location).create() as out:
        pq.write_table(table, out, row_group_size=100)
    with io.new_input(location).open() as f:
        assert pq.read_table(f).equals(table)


def test_scan_fetches_each_small_data_file_in_one_request(
    moto_s3: S3Server, tmp_path: Path
) -> None:
    """A scan on S3 sends one GET per data file (size from the manifest: no HEAD, no separate
    footer read), so scanning many files is not bound by request latency."""
    from icefloe import StaticTable
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.schema import Schema
    from icefloe.transforms import parse_transform
    from icefloe.types import LongType, NestedField, StringType

    props = moto_s3.properties()
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=moto_s3.fresh_location(), **props
    )
    cat.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[20]"), "b"))
    t = cat.create_table("ns.t", schema, partition_spec=spec)
    t.append(
        pa.table({"id": pa.array(range(2000), pa.int64()), "s": [str(i) for i in range(2000)]})
    )
    assert t.inspect.files().num_rows == 20
    assert moto_s3.requests is not None
    before = moto_s3.requests.snapshot()
    got = StaticTable.from_metadata(t.metadata_location, properties=props).scan().to_arrow()
    made = moto_s3.requests.since(before)
    assert sorted(got["id"].to_pylist()) == list(range(2000))
    # metadata file, manifest list and manifest, then one GET per data file
    assert made["GET"] <= 20 + 3 and made["HEAD"] <= 3, made
