"""FileIO against real S3-compatible servers (moto and s3proxy on loopback ports)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import AlreadyExistsError, NotFoundError, ValidationError
from icefloe.io import FileIO
from support.s3 import S3Server

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


def _partitioned_table(server: S3Server, tmp_path: Path, files: int) -> str:
    """A table of ``files`` data files (100 rows each) on ``server``; its metadata location."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.schema import Schema
    from icefloe.transforms import parse_transform
    from icefloe.types import LongType, NestedField, StringType

    props = server.properties()
    uri = f"sqlite:///{tmp_path}/c.db"
    cat = SqlCatalog("c", uri=uri, warehouse=server.fresh_location(), **props)
    cat.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("identity"), "id_part"))
    t = cat.create_table("ns.t", schema, partition_spec=spec)
    n = files * 100
    ids = pa.array([i % files for i in range(n)], pa.int64())
    t.append(pa.table({"id": ids, "s": [str(i) for i in range(n)]}))
    assert t.inspect.files().num_rows == files
    return t.metadata_location


def test_scan_fetches_each_small_data_file_in_one_request(
    moto_s3: S3Server, tmp_path: Path
) -> None:
    """A scan on S3 sends one GET per data file (size from the manifest: no HEAD, no separate
    footer read)."""
    from icefloe import StaticTable

    location = _partitioned_table(moto_s3, tmp_path, files=20)
    assert moto_s3.requests is not None
    before = moto_s3.requests.snapshot()
    got = StaticTable.from_metadata(location, properties=moto_s3.properties()).scan().to_arrow()
    made = moto_s3.requests.since(before)
    assert got.num_rows == 2000
    # metadata file, manifest list and manifest, then one GET per data file
    assert made["GET"] <= 20 + 3 and made["HEAD"] <= 3, made


def test_scan_fetches_files_ahead_while_requests_wait(moto_s3: S3Server, tmp_path: Path) -> None:
    """With a slow store (0.2 s per answer), a scan has several file fetches in flight at once
    (more than its decode threads), so it is not bound by the store's latency."""
    from icefloe import StaticTable
    from icefloe.read.scan_output import default_workers
    from support.s3 import _start_moto

    location = _partitioned_table(moto_s3, tmp_path, files=12)
    slow, server = _start_moto(latency_s=0.2)  # moto's state is per process: same buckets
    try:
        props = server.properties()
        assert server.requests is not None
        got = StaticTable.from_metadata(location, properties=props).scan().to_arrow()
        assert got.num_rows == 1200
        assert server.requests.max_in_flight >= min(12, 2 * default_workers() + 2)
    finally:
        slow.stop()


@pytest.mark.parametrize("char", ["\t", "\n", "\r"])
def test_a_warehouse_with_a_control_character_writes_nothing(
    s3_server: S3Server, tmp_path: Path, char: str
) -> None:
    """A warehouse (or table location) holding a tab, CR or LF is refused with a
    ``ValidationError`` naming it before anything is written: pyarrow's parser would drop the
    character and write under another key than the metadata records."""
    from icefloe.catalog import load_catalog

    prefix = s3_server.fresh_location()
    warehouse = f"{prefix}/wh{char}x"
    cat = load_catalog(
        "c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse,
        **s3_server.properties(),
    )  # fmt: skip
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(ValidationError, match="control character") as info:
        cat.create_table("db.t", schema)
    assert repr(warehouse)[:-1] in str(info.value)  # the location named, the character shown
    with pytest.raises(ValidationError, match="control character"):
        cat.create_table("db.u", schema, location=f"{prefix}/u{char}")
    assert not cat.table_exists("db.t") and not cat.table_exists("db.u")
    bucket, _, key = prefix.removeprefix("s3://").partition("/")
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=key)
    assert listed.get("KeyCount", 0) == 0


def test_a_metadata_write_to_an_unreachable_store_is_not_cleaned_up_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing reached the store, so no delete is sent after the failed write: on GCS each
    one waited out the retry limit again (a closed port took four times the limit)."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import MetadataWriteError
    from icefloe.io.errors import never_connected
    from support.rest import free_port

    deletes: list[str] = []
    monkeypatch.setattr(FileIO, "delete_quietly", lambda self, loc: deletes.append(loc))
    cat = SqlCatalog(
        "c",
        uri=f"sqlite:///{tmp_path}/c.db",
        warehouse="s3://lake/wh",
        **{
            "s3.endpoint": f"http://127.0.0.1:{free_port()}",
            "s3.access-key-id": "k",
            "s3.secret-access-key": "s",
            "s3.region": "us-east-1",
        },
    )
    cat.create_namespace("db")
    with pytest.raises(MetadataWriteError) as caught:
        cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    assert never_connected(caught.value)
    assert deletes == []
    gcs = (
        "google::cloud::Status(UNAVAILABLE: Retry policy exhausted, with a last message of "
        "PerformWork() - CURL error [7]=Could not connect to server)"
    )
    assert never_connected(OSError(gcs))
    for sent in ("AWS Error ACCESS_DENIED during PutObject", "curlCode: 28, Timeout was reached"):
        assert not never_connected(OSError(sent)), sent  # the request may have been written


def test_a_dotted_bucket_without_path_style_is_read_as_it_was_written(
    s3_server: S3Server, tmp_path: Path
) -> None:
    """``s3.path-style-access=false`` and a bucket name with a dot: icefloe's S3 client wrote
    path-style (no host name holds the dot) while pyarrow forced virtual hosts
    (``my.dotted.bucket.127.0.0.1``), so a table committed and then no read of it worked."""
    from icefloe.catalog.sql import SqlCatalog

    bucket = s3_server.bucket("my.dotted.bucket")
    props = s3_server.properties(**{"s3.path-style-access": "false"})
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"s3://{bucket}/wh", **props)
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3]}))
    assert sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    cat.close()
