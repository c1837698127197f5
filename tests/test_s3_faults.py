"""Object-store failures as icefloe reports them: real moto on loopback, behind a proxy that
injects the faults (:mod:`support.s3_faults`).

Failed uploads are :class:`FileIOError` naming the file and leave no incomplete multipart
upload; network failures while reading pages are I/O errors, not corrupt files; secrets a
server echoes never reach a message; an access key without its secret, and an object-store
location with an empty path segment, are refused up front; partition directories are named
as Iceberg Java names them.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    CorruptFileError,
    FileIOError,
    MetadataWriteError,
    UnknownWriteStateError,
    ValidationError,
    commit_did_not_happen,
)
from icefloe.io import FileIO, check_location
from icefloe.table import Table
from icefloe.write import native_writer
from support.s3 import S3Server
from support.s3_faults import Fault, FaultProxy, fault_proxy

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
SECRET = "secret-key-of-the-fault-tests-0123456789"
TOKEN = "FwoGZXIvYXdzEFAULTTESTSESSIONTOKEN+/=0123456789"


@pytest.fixture
def proxy(moto_s3: S3Server) -> Iterator[FaultProxy]:
    with fault_proxy(moto_s3.endpoint) as p:
        yield p


def _properties(moto_s3: S3Server, proxy: FaultProxy, **extra: str) -> dict[str, str]:
    return moto_s3.properties(**{"s3.endpoint": proxy.endpoint, **extra})


def _table(moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path) -> tuple[Table, str]:
    """An empty table on moto, reached through ``proxy``; and its location."""
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=moto_s3.fresh_location(),
        **_properties(moto_s3, proxy),
    )  # fmt: skip
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    return t, t.location


def _uploads(moto_s3: S3Server, location: str) -> list[Any]:
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    answer = moto_s3.client().list_multipart_uploads(Bucket=bucket, Prefix=prefix)
    return list(answer.get("Uploads", []))


def _data_files(moto_s3: S3Server, location: str) -> list[str]:
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    answer = moto_s3.client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/data/")
    return [o["Key"] for o in answer.get("Contents", []) if o["Key"].endswith(".parquet")]


def _rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"r{i}" for i in range(n)]})


# -- failed uploads ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        Fault("POST", r"\.parquet\?uploadId=", 503),  # CompleteMultipartUpload
        Fault("PUT", r"\.parquet\?partNumber=", 0),  # UploadPart: connection reset
    ],
    ids=["complete-503", "part-reset"],
)
def test_a_failed_streamed_upload_is_a_file_io_error_and_leaves_no_upload(
    moto_s3: S3Server,
    proxy: FaultProxy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fault: Fault,
) -> None:
    monkeypatch.setattr(native_writer, "ENABLED", False)  # pyarrow's writer streams the file
    t, location = _table(moto_s3, proxy, tmp_path)
    proxy.add(fault)
    with pytest.raises(FileIOError, match=r"cannot write s3://\S+/data/\S+\.parquet") as info:
        t.append(_rows(10))
    assert fault.hits, "the fault was not reached"
    assert "AWS Error" in str(info.value)
    proxy.clear()
    assert _uploads(moto_s3, location) == []
    assert _data_files(moto_s3, location) == []
    assert t.refresh().scan().to_arrow().num_rows == 0


def _partitioned_stream(batches: int, fail_at: int | None = None) -> pa.RecordBatchReader:
    """A stream of ``batches`` batches of 1,000 rows over four values of ``s``."""

    def gen() -> Iterator[pa.RecordBatch]:
        for b in range(batches):
            if b == fail_at:
                raise RuntimeError("the source broke")
            ids = pa.array(range(b * 1000, (b + 1) * 1000), pa.int64())
            yield pa.record_batch(
                [ids, pa.array([f"p{i % 4}" for i in range(1000)])], schema=SCHEMA
            )

    return pa.RecordBatchReader.from_batches(SCHEMA, gen())


@pytest.mark.parametrize(
    "fault",
    [Fault("POST", r"\.parquet\?uploadId=", 503, skip=2), None],
    ids=["third-complete-503", "stream-breaks"],
)
def test_a_partitioned_stream_failing_part_way_leaves_no_object_and_no_upload(
    moto_s3: S3Server,
    proxy: FaultProxy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fault: Fault | None,
) -> None:
    """A partitioned stream keeps a file per partition open across its pieces: a failure
    (an upload that cannot complete after two others did, or the source breaking) deletes
    the objects completed and aborts the uploads still open."""
    import icefloe.write.input as input_mod
    import icefloe.write.rolling as rolling

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    monkeypatch.setattr(rolling, "STREAM_BUFFER_BYTES", 15_000)
    t, location = _table(moto_s3, proxy, tmp_path)
    t.update_spec().add_field("s", "identity").commit()
    t.set_properties({"write.target-file-size-bytes": "9000"})  # files close along the way
    if fault is not None:
        proxy.add(fault)
        with pytest.raises(FileIOError, match=r"cannot write s3://\S+/data/\S+\.parquet"):
            t.append(_partitioned_stream(40))
        assert fault.hits, "the fault was not reached"
    else:
        with pytest.raises(RuntimeError, match="broke"):
            t.append(_partitioned_stream(40, fail_at=30))
    proxy.clear()
    assert _uploads(moto_s3, location) == []
    assert _data_files(moto_s3, location) == []
    assert t.refresh().current_snapshot() is None
    t.append(_partitioned_stream(40))
    got = t.scan().to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(40_000))
    assert len(_data_files(moto_s3, location)) < 40  # files rolled at the target, not per piece


def test_a_failed_output_stream_aborts_its_upload(moto_s3: S3Server, proxy: FaultProxy) -> None:
    """:meth:`OutputFile.writing`, which data, delete and statistics files are written
    through: a failed completion is a FileIOError and its upload is aborted."""
    location = f"{moto_s3.fresh_location()}/f.bin"
    proxy.add(Fault("POST", r"/f\.bin\?uploadId=", 500))
    out = FileIO(_properties(moto_s3, proxy)).new_output(location)
    failed = pytest.raises(FileIOError, match=re.escape(f"cannot write {location}"))
    with failed, out.writing() as stream:
        stream.write(b"x" * 1000)
    proxy.clear()
    assert _uploads(moto_s3, location) == []


@pytest.mark.parametrize("size", [10, 6 << 20, 12 << 20], ids=["small", "one-part", "two-parts"])
def test_a_block_that_raises_publishes_nothing(
    moto_s3: S3Server, proxy: FaultProxy, size: int
) -> None:
    """A block of :meth:`OutputFile.writing` that raises leaves no object (closing pyarrow's
    stream would have completed the upload with what was written so far) and no upload."""
    location = f"{moto_s3.fresh_location()}/f.bin"
    io = FileIO(_properties(moto_s3, proxy))
    failed = pytest.raises(ValueError, match="the producer failed")
    with failed, io.new_output(location).writing() as stream:
        stream.write(b"x" * size)
        raise ValueError("the producer failed")
    assert not io.new_input(location).exists()
    assert _uploads(moto_s3, location) == []


@pytest.mark.parametrize("own_client", [False, True], ids=["pyarrow", "own-client"])
def test_a_failed_overwrite_keeps_the_previous_object(
    moto_s3: S3Server, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch, own_client: bool
) -> None:
    """Replacing an object (a hadoop catalog's version hint or namespace properties) that fails,
    its upload refused by the store or its producer raising, leaves the previous object as it
    was; before, the object was deleted. Without a signing client of icefloe's own (instance
    credentials only pyarrow finds) the object is streamed through pyarrow."""
    if not own_client:
        monkeypatch.setattr(FileIO, "s3_client", lambda self, location: None)
    location = f"{moto_s3.fresh_location()}/ns.json"
    bucket, _, key = location.removeprefix("s3://").partition("/")
    moto_s3.client().put_object(Bucket=bucket, Key=key, Body=b"old")
    io = FileIO(_properties(moto_s3, proxy))
    stored = lambda: moto_s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()  # noqa: E731
    proxy.add(Fault("PUT", r"/ns\.json", 500))
    with pytest.raises((FileIOError, UnknownWriteStateError), match=re.escape(location)):
        io.new_output(location).write(b"x" * (6 << 20), overwrite=True)
    assert proxy.faults[0].hits
    proxy.clear()
    assert stored() == b"old"
    failed = pytest.raises(ValueError, match="the producer failed")
    with failed, io.new_output(location).writing(overwrite=True) as stream:
        stream.write(b"new")
        raise ValueError("the producer failed")
    assert stored() == b"old"
    if own_client:  # pyarrow's stream, when an upload fails, leaves it for a client to abort
        assert _uploads(moto_s3, location) == []
    io.new_output(location).write(b"new", overwrite=True)
    assert stored() == b"new"


def test_a_small_data_file_is_written_with_one_put(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """A small (natively encoded) data file costs one PUT (not a HEAD, a LIST and the three
    requests of a multipart upload)."""
    t, _ = _table(moto_s3, proxy, tmp_path)
    proxy.clear()
    t.append(_rows(10))
    data = [(m, p) for m, p in proxy.log if "/data/" in p]
    assert [m for m, _ in data] == ["PUT"], data
    assert "?" not in data[0][1]


def test_a_failed_small_upload_is_a_file_io_error_and_leaves_nothing(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    t, location = _table(moto_s3, proxy, tmp_path)
    proxy.add(Fault("PUT", r"/data/\S+\.parquet", 403))
    with pytest.raises(FileIOError, match=r"cannot write s3://\S+/data/\S+\.parquet"):
        t.append(_rows(10))
    proxy.clear()
    assert _uploads(moto_s3, location) == [] and _data_files(moto_s3, location) == []
    assert t.refresh().scan().to_arrow().num_rows == 0


@pytest.mark.parametrize("status", [503, 0], ids=["503", "reset"])
def test_a_metadata_file_that_cannot_be_written_leaves_the_table_unchanged(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path, status: int
) -> None:
    """Every PUT of the new metadata file fails (the store's outcome unknown): the pointer
    never moved, so the commit is known not to have happened and its data files go."""
    t, location = _table(moto_s3, proxy, tmp_path)
    t.append(_rows(3))
    kept = _data_files(moto_s3, location)
    fault = Fault("PUT", r"/metadata/\S+\.metadata\.json", status)
    proxy.add(fault)
    with pytest.raises(MetadataWriteError, match="the table did not change") as info:
        t.append(_rows(10))
    assert not isinstance(info.value, UnknownWriteStateError) and fault.hits
    assert commit_did_not_happen(info.value)
    proxy.clear()
    assert _data_files(moto_s3, location) == kept  # the failed append's file was deleted
    assert t.refresh().scan().to_arrow().num_rows == 3
    t.append(_rows(1))  # the table goes on
    assert t.scan().to_arrow().num_rows == 4


# -- writes whose answer is lost --------------------------------------------------------------


def _every_snapshot_rows(t: Table) -> list[int]:
    return [t.scan(snapshot_id=s.snapshot_id).to_arrow().num_rows for s in t.snapshots()]


def test_a_version_file_stored_without_an_answer_is_found_to_be_ours(
    moto_s3: S3Server, proxy: FaultProxy
) -> None:
    """File-system catalog: the create of the next version file is stored but its answer is
    lost, and the read-back that follows the retry's 412 first gets a 503. The read-back is
    asked again and finds our own file: the append lands once, and no file of a snapshot in
    the table is deleted (the answer was once taken for another writer's commit, the append
    replayed on top of itself and the first attempt's manifests deleted)."""
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("h", warehouse=moto_s3.fresh_location(), **_properties(moto_s3, proxy))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows(10))
    put = proxy.add(Fault("PUT", r"/v3\.metadata\.json$", 0, times=1, forward=True))
    get = proxy.add(Fault("GET", r"/v3\.metadata\.json$", 503, times=1))
    t.append(_rows(10))
    assert put.hits == 1 and get.hits == 1
    proxy.clear()
    fresh = HadoopCatalog("h", warehouse=cat.warehouse, **moto_s3.properties()).load_table("db.t")
    assert fresh.metadata_location.endswith("/v3.metadata.json")
    assert _every_snapshot_rows(fresh) == [10, 20]


def test_a_version_file_whose_read_back_never_answers_is_an_unknown_commit(
    moto_s3: S3Server, proxy: FaultProxy
) -> None:
    """As above, but every read-back fails: the commit's outcome is unknown, so it raises
    CommitStateUnknownError and keeps every file; the table holds the append once."""
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.exceptions import CommitStateUnknownError

    cat = HadoopCatalog("h", warehouse=moto_s3.fresh_location(), **_properties(moto_s3, proxy))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows(10))
    proxy.add(Fault("PUT", r"/v3\.metadata\.json$", 0, times=1, forward=True))
    proxy.add(Fault("GET", r"/v3\.metadata\.json$", 503))
    with pytest.raises(CommitStateUnknownError):
        t.append(_rows(10))
    proxy.clear()
    fresh = HadoopCatalog("h", warehouse=cat.warehouse, **moto_s3.properties()).load_table("db.t")
    assert _every_snapshot_rows(fresh) == [10, 20]


def _hadoop_table(moto_s3: S3Server, proxy: FaultProxy) -> tuple[Any, Table]:
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("h", warehouse=moto_s3.fresh_location(), **_properties(moto_s3, proxy))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows(10))
    return cat, t


def _reloaded(moto_s3: S3Server, cat: Any) -> Table:
    from icefloe.catalog.hadoop import HadoopCatalog

    return HadoopCatalog("h", warehouse=cat.warehouse, **moto_s3.properties()).load_table("db.t")


def test_a_failed_reload_after_a_reported_conflict_keeps_the_files(
    moto_s3: S3Server, proxy: FaultProxy
) -> None:
    """The create of the next version is stored but answered 409 (as by a gateway that
    retried it for us), the refresh finds our own version as another writer's, and the
    transaction's reload to rebuild then fails: without the table's state the commit cannot
    be checked, so the outcome is unknown and every file stays (they were deleted, leaving
    the committed snapshot unreadable)."""
    from icefloe.exceptions import CommitStateUnknownError

    cat, t = _hadoop_table(moto_s3, proxy)
    proxy.add(Fault("PUT", r"/v3\.metadata\.json$", 409, times=1, forward=True))
    proxy.add(Fault("GET", r"/v3\.metadata\.json$", 503, skip=1))
    with pytest.raises(CommitStateUnknownError, match="reloading the table"):
        t.append(_rows(10))
    proxy.clear()
    assert _every_snapshot_rows(_reloaded(moto_s3, cat)) == [10, 20]


def test_a_check_failing_after_the_version_is_written_is_an_unknown_commit(
    moto_s3: S3Server, proxy: FaultProxy
) -> None:
    """The next version is created, then the check that the base is still there fails (503):
    the commit is most likely in the table, so the error says its outcome is unknown (a
    plain FileIOError invited a retry that appended the rows twice)."""
    from icefloe.exceptions import CommitStateUnknownError

    cat, t = _hadoop_table(moto_s3, proxy)
    proxy.add(Fault("HEAD", r"/v2\.metadata\.json$", 503, skip=1))
    with pytest.raises(CommitStateUnknownError, match="wrote s3://"):
        t.append(_rows(10))
    proxy.clear()
    assert _every_snapshot_rows(_reloaded(moto_s3, cat)) == [10, 20]


def test_a_data_file_stored_without_an_answer_is_found_to_be_ours(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """The single PUT of a new data file is stored, its answer lost; the retry's 412 is
    followed by a read-back that first gets a 503: the file is ours and the append goes on
    (it was reported as "file already exists", the file left behind)."""
    t, location = _table(moto_s3, proxy, tmp_path)
    put = proxy.add(Fault("PUT", r"/data/\S+\.parquet$", 0, times=1, forward=True))
    get = proxy.add(Fault("GET", r"/data/\S+\.parquet$", 503, times=1))
    t.append(_rows(10))
    assert put.hits == 1 and get.hits == 1
    proxy.clear()
    assert t.refresh().scan().to_arrow().num_rows == 10
    assert len(_data_files(moto_s3, location)) == 1


def test_a_conflict_answered_after_a_lost_answer_is_asked_again(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """A 500 to the create of the next metadata file, then S3's 409 (a conditional write of
    the key in progress): the 409 is no proof that another writer won, the create is sent
    again and the append lands once."""
    t, _ = _table(moto_s3, proxy, tmp_path)
    t.append(_rows(10))
    first = proxy.add(Fault("PUT", r"/metadata/\S+\.metadata\.json$", 500, times=1))
    second = proxy.add(Fault("PUT", r"/metadata/\S+\.metadata\.json$", 409, times=1))
    t.append(_rows(10))
    assert first.hits == 1 and second.hits == 1
    proxy.clear()
    assert _every_snapshot_rows(t.refresh()) == [10, 20]


def test_a_conflict_answered_to_a_first_create_is_asked_again(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """S3's 409 (a conditional write of the key in progress; S3 says to retry) to the first
    create of a uniquely named metadata file: the create is sent again and the append lands
    (it failed as "file already exists")."""
    t, _ = _table(moto_s3, proxy, tmp_path)
    conflict = proxy.add(Fault("PUT", r"/metadata/\S+\.metadata\.json$", 409, times=1))
    t.append(_rows(10))
    assert conflict.hits == 1
    proxy.clear()
    assert _every_snapshot_rows(t.refresh()) == [10]


# -- maintenance ---------------------------------------------------------------------------------


def test_a_purge_whose_manifests_cannot_be_read_fails_before_dropping(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """Every read of the manifests answers 503: the purge cannot tell which data files are the
    table's, so it fails with the table still there (it dropped the table and left every data
    file behind, named by no metadata, where orphan removal never looks)."""
    t, location = _table(moto_s3, proxy, tmp_path)
    t.append(_rows(10))
    t.append(_rows(10))
    cat = t.catalog
    proxy.add(Fault("GET", r"-m\d+\.avro$", 503))
    with pytest.raises(FileIOError):
        cat.drop_table("db.t", purge=True)
    proxy.clear()
    assert cat.table_exists("db.t") and len(_data_files(moto_s3, location)) == 2
    cat.drop_table("db.t", purge=True)
    assert not cat.table_exists("db.t") and _data_files(moto_s3, location) == []


def test_an_expiry_whose_manifest_lists_cannot_be_read_reports_what_it_committed(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """The expiry commits, then the expired snapshots' manifest lists answer 503: the result
    says which snapshots are gone and why their files were left (a FileIOError here claimed
    the committed expiry had failed, and its files were never looked for again)."""
    t, location = _table(moto_s3, proxy, tmp_path)
    for i in range(3):
        t.overwrite(_rows(10 + i))
    expired = [s.snapshot_id for s in t.snapshots()][:-1]
    proxy.add(Fault("GET", r"/metadata/snap-\S+\.avro$", 503))
    r = t.expire_snapshots(retain_last=1, older_than_ms=2**62)
    proxy.clear()
    assert sorted(r.snapshot_ids) == sorted(expired) and not r.files_deleted
    assert "snap-" in r.files_error  # names the manifest list it could not read
    assert len(t.refresh().snapshots()) == 1
    assert t.scan().to_arrow().num_rows == 12
    assert len(_data_files(moto_s3, location)) == 3  # left for orphan removal


# -- reads -------------------------------------------------------------------------------------


def test_a_connection_reset_while_reading_pages_is_a_file_io_error(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """The footer is read, then the page reads are reset: an I/O failure, not a corrupt file.
    (Files above 4 MiB are read in ranges through pyarrow.)"""
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=moto_s3.fresh_location(),
        **_properties(moto_s3, proxy),
    )  # fmt: skip
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary())])
    t = cat.create_table("db.t", schema)
    blobs = [np.random.default_rng(i).bytes(1 << 20) for i in range(6)]  # incompressible
    t.append(pa.table({"id": pa.array(range(6), pa.int64()), "b": blobs}, schema=schema))
    proxy.add(Fault("GET", r"/data/\S+\.parquet", 0, skip=1))
    with pytest.raises(FileIOError, match=r"cannot read s3://\S+/data/\S+\.parquet") as info:
        t.refresh().scan().to_arrow()
    assert not isinstance(info.value, CorruptFileError)
    assert "Connection reset" in str(info.value) or "curlCode" in str(info.value)


def test_io_failures_and_malformed_bytes_are_told_apart() -> None:
    from icefloe.read.parquet_file import corrupt_error

    path = "s3://b/t/data/f.parquet"
    eio = corrupt_error(path, OSError(errno.EIO, "Input/output error"))
    assert isinstance(eio, FileIOError) and path in str(eio)
    timeout = OSError("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 28")
    assert isinstance(corrupt_error(path, timeout), FileIOError)
    thrift = OSError("Couldn't deserialize thrift: TProtocolException: Invalid data")
    assert isinstance(corrupt_error(path, thrift), CorruptFileError)
    crc = OSError("CRC checksum verification failed")
    assert isinstance(corrupt_error(path, crc), CorruptFileError)


# -- secrets -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 403])
def test_secrets_echoed_by_the_server_stay_out_of_errors(
    moto_s3: S3Server, proxy: FaultProxy, status: int
) -> None:
    """An error body that echoes the session token and the secret key reaches no message:
    through icefloe's own client (a PUT), through pyarrow (a GET; its text does not always
    carry the body, so pyarrow's wording of an echo is checked directly too)."""
    from icefloe.io import file_io_error

    props = moto_s3.properties(
        **{
            "s3.endpoint": proxy.endpoint,
            "s3.secret-access-key": SECRET,
            "s3.session-token": TOKEN,
        }
    )
    io = FileIO(props)
    location = f"{moto_s3.fresh_location()}/e.bin"
    bucket, _, key = location.removeprefix("s3://").partition("/")
    moto_s3.client().put_object(Bucket=bucket, Key=key, Body=bytes(4096))  # pyarrow HEADs it
    proxy.add(Fault("PUT", r"/e\.bin", status, echo=SECRET))
    proxy.add(Fault("GET", r"/e\.bin", status, echo=SECRET))
    with pytest.raises(FileIOError) as put:
        io.new_output(location).write(b"x", overwrite=True)
    with pytest.raises(FileIOError) as get:
        io.new_input(location).read()
    assert all(f.hits for f in proxy.faults), proxy.log
    echoed = OSError(f"AWS Error ACCESS_DENIED during GetObject operation: {TOKEN} {SECRET}")
    errors = [put.value, get.value, file_io_error(echoed, location, "read")]
    for error in errors:
        text = f"{error} {error!r}"
        assert TOKEN not in text and SECRET not in text, text
        assert location in text
    assert "***" in str(errors[0]) and "***" in str(errors[2])


@pytest.mark.parametrize("status", [400, 403])
def test_secrets_echoed_by_the_server_stay_out_of_tracebacks(
    moto_s3: S3Server, proxy: FaultProxy, status: int
) -> None:
    """The error pyarrow raised, chained to the typed one, holds no secret either: before, a
    log's ``logging.exception`` or the CLI's ``--debug`` printed the session token the server
    echoed, from the chained error's text."""
    import traceback

    props = _properties(
        moto_s3, proxy, **{"s3.secret-access-key": SECRET, "s3.session-token": TOKEN}
    )
    io = FileIO(props)
    location = f"{moto_s3.fresh_location()}/big.bin"
    proxy.add(Fault("POST", r"/big\.bin\?uploads", status, echo=SECRET))
    proxy.add(Fault("GET", r"/big\.bin", status, echo=SECRET))
    failed = pytest.raises(FileIOError)
    with failed as write, io.new_output(location).writing() as stream:  # pyarrow's upload
        stream.write(b"x" * (6 << 20))
    bucket, _, key = location.removeprefix("s3://").partition("/")
    moto_s3.client().put_object(Bucket=bucket, Key=key, Body=bytes(4096))
    with pytest.raises(FileIOError) as read:
        io.new_input(location).read()  # pyarrow's stream
    assert all(f.hits for f in proxy.faults), proxy.log
    for error in (write.value, read.value):
        printed = "".join(traceback.format_exception(error))
        chain: list[BaseException] = []
        current: BaseException | None = error
        while current is not None and current not in chain:
            chain.append(current)
            current = current.__cause__ or current.__context__
        texts = [printed, *(f"{e} {e!r} {e.args!r}" for e in chain)]
        assert len(chain) > 1  # the store's error is still there to debug with
        assert not any(TOKEN in t or SECRET in t for t in texts), texts


def test_keys_xml_cannot_carry_are_deleted_one_by_one(moto_s3: S3Server, proxy: FaultProxy) -> None:
    """Files whose names hold U+FFFE or U+FFFF (a namespace named so) are deleted by expiry and
    purges: before, every DeleteObjects body holding one was invalid XML and deleted nothing."""
    prefix = moto_s3.fresh_location()
    bucket, _, root = prefix.removeprefix("s3://").partition("/")
    names = ["sales\ufffe/a.parquet", "x\uffff.avro", "plain-1", "plain-2"]
    for name in names:
        moto_s3.client().put_object(Bucket=bucket, Key=f"{root}/{name}", Body=b"1")
    io = FileIO(_properties(moto_s3, proxy))
    deleted: list[int] = []
    proxy.clear()
    io.delete_files([f"{prefix}/{name}" for name in names], deleted.append)
    assert moto_s3.client().list_objects_v2(Bucket=bucket, Prefix=root)["KeyCount"] == 0
    assert sum(deleted) == len(names)
    methods = sorted(m for m, _ in proxy.log)
    assert methods == ["DELETE", "DELETE", "POST"], proxy.log  # the plain keys in one batch


# -- configuration -----------------------------------------------------------------------------


def test_an_access_key_without_its_secret_is_refused_before_any_request(
    moto_s3: S3Server, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    location = f"{moto_s3.fresh_location()}/k.bin"
    for secret in ({}, {"s3.secret-access-key": ""}):
        props = {"s3.endpoint": proxy.endpoint, "s3.access-key-id": "testing", **secret}
        io = FileIO(props)
        with pytest.raises(ValidationError, match=re.escape("s3.secret-access-key")):
            io.new_output(location).write(b"x")  # icefloe's client
        with pytest.raises(ValidationError, match=re.escape("s3.secret-access-key")):
            io.exists(location)  # pyarrow's
    io = FileIO({"s3.endpoint": proxy.endpoint, "s3.secret-access-key": "sekrit-value"})
    with pytest.raises(ValidationError, match=re.escape("s3.access-key-id")):
        io.exists(location)  # the secret would be ignored for the environment's credentials
    assert proxy.log == []


@pytest.mark.parametrize(
    "extra", [{"s3.anonymous": "true"}, {"s3.role-arn": "arn:aws:iam::123456789012:role/r"}]
)
def test_keys_with_anonymous_access_or_a_role_are_refused_before_any_request(
    moto_s3: S3Server, proxy: FaultProxy, extra: dict[str, str]
) -> None:
    """Keys together with ``s3.anonymous=true`` or ``s3.role-arn`` are a ValidationError naming
    the properties, for icefloe's own client and pyarrow's alike; before, pyarrow raised a bare
    ValueError from every operation while icefloe's client went anonymous silently."""
    location = f"{moto_s3.fresh_location()}/k.bin"
    io = FileIO(_properties(moto_s3, proxy, **extra))
    (name,) = extra
    for op in (lambda: io.new_output(location).write(b"x"), lambda: io.exists(location)):
        with pytest.raises(ValidationError, match=re.escape(name)) as info:
            op()
        assert "s3.access-key-id" in str(info.value)
    assert proxy.log == []


@pytest.mark.parametrize("name", ["s3.session-token", "s3.secret-access-key", "env"])
def test_a_credential_with_a_line_break_is_refused_without_showing_it(
    moto_s3: S3Server, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A credential ending in a newline (a YAML block scalar) is a ValidationError naming the
    property, not holding the value; before, writes raised http.client's bare ValueError whose
    text was the token, and reads a FileIOError holding it."""
    location = f"{moto_s3.fresh_location()}/k.bin"
    if name == "env":
        for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.setenv(var, "testing")
        monkeypatch.setenv("AWS_SESSION_TOKEN", f"{TOKEN}\n")
        io = FileIO({"s3.endpoint": proxy.endpoint, "s3.region": "us-east-1"})
        expected = "AWS_SESSION_TOKEN"
    else:
        io = FileIO(_properties(moto_s3, proxy, **{name: f"{TOKEN}\r\n"}))
        expected = name
    ops = [
        lambda: io.new_output(location).write(b"x"),
        lambda: io.new_input(location).open(size=1),
    ]
    if name != "env":  # pyarrow's own chain reads the environment itself
        ops.append(lambda: io.exists(location))
    for op in ops:
        with pytest.raises(ValidationError, match=re.escape(expected)) as info:
            op()
        assert TOKEN not in f"{info.value} {info.value!r}"
    assert proxy.log == []


def test_an_object_store_location_with_an_empty_or_dot_segment_is_refused(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """pyarrow cannot write below ``a//b`` on object stores, and reads ``a/../b`` elsewhere than
    icefloe's own client writes it: refused when the table is made, before anything is written;
    a local ``//`` or ``..`` and a trailing ``/`` are fine."""
    prefix = moto_s3.fresh_location()
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=prefix, **_properties(moto_s3, proxy)
    )
    cat.create_namespace("db")
    proxy.clear()
    for location in (f"{prefix}/w//db/t", f"{prefix}//t"):
        with pytest.raises(ValidationError, match="empty path segment"):
            cat.create_table("db.t", SCHEMA, location=location)
    # icefloe's own requests keep '.' and '..' in the key, pyarrow's drop them: a table there
    # committed its metadata where its loads could not find it
    for location in (f"{prefix}/a/../t", f"{prefix}/./t", f"{prefix}/t/.."):
        with pytest.raises(ValidationError, match=r"'\.' or '\.\.' path segment"):
            cat.create_table("db.t", SCHEMA, location=location)
    with pytest.raises(ValidationError, match="path segment"):
        cat.create_table("db.t", SCHEMA, properties={"write.data.path": f"{prefix}/x/../d"})
    assert [m for m, _ in proxy.log if m in ("PUT", "POST")] == []
    check_location(f"{prefix}/t/")
    check_location(f"{prefix}/t/a..b/.c/d.")
    check_location(f"{tmp_path}//t")
    check_location(f"file://{tmp_path}//t")
    check_location(f"{tmp_path}/a/../t")  # a local path: the file system resolves it


def test_credentials_in_a_location_and_bad_bucket_names_are_refused(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``s3://key:secret@bucket`` was taken for a bucket named ``key:secret@bucket`` (its
    errors and clean-up warnings naming the secret); a non-ASCII bucket raised a raw
    ``UnicodeEncodeError`` from the request line. Both are refused before anything is written,
    naming no secret; an Azure ``container@account`` is left alone."""
    secret = "Pw-in-a-location-42"
    props = _properties(moto_s3, proxy)
    bucket = moto_s3.fresh_location().partition("://")[2].partition("/")[0]
    for warehouse, message in (
        (f"s3://AKIAX:{secret}@{bucket}/wh", "holds credentials"),
        (f"s3://AKIAX:{secret[:4]}/{secret[4:]}+x@{bucket}/wh", "holds credentials"),
        (f"s3://{bucket}:9000/wh", "or a port"),
        ("s3://bü/wh", "not a valid bucket name"),
        ("gs://a b/wh", "not a valid bucket name"),
    ):
        cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse, **props)
        cat.create_namespace(f"db{len(message)}{len(warehouse)}")
        proxy.clear()
        with caplog.at_level("WARNING"), pytest.raises(ValidationError, match=message) as info:
            cat.create_table(f"db{len(message)}{len(warehouse)}.t", SCHEMA)
        assert secret not in f"{info.value} {info.value!r}" and secret not in caplog.text
        assert [m for m, _ in proxy.log if m in ("PUT", "POST")] == []
    check_location("abfss://container@account.dfs.core.windows.net/wh/t")


def test_a_password_in_a_url_is_scrubbed_from_texts() -> None:
    from icefloe.io.errors import scrub

    text = "cannot delete s3://AKIAX:pw%2Fx@b/k, postgresql://u:p@h/db, s3://b/k@v, http://h:80/"
    assert scrub(text) == (
        "cannot delete s3://AKIAX:***@b/k, postgresql://u:***@h/db, s3://b/k@v, http://h:80/"
    )
    # AWS secrets hold '/' and '+'
    assert scrub("s3://AKIAX:wJal/K7M+d@b/k/f.parquet") == "s3://AKIAX:***@b/k/f.parquet"


def test_a_file_location_with_a_dot_segment_is_refused_on_object_stores(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path
) -> None:
    """A file (not only a table) location with a ``.``, ``..`` or empty segment is refused on
    object stores: before, a file was written under the key ``w/./x.bin`` and then not found
    (pyarrow reads ``w/x.bin``), and add_files committed a path no scan could read. Listed
    objects with such keys (written by other tools) are still deleted, by their exact key."""
    prefix = moto_s3.fresh_location()
    io = FileIO(_properties(moto_s3, proxy))
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=prefix, **_properties(moto_s3, proxy)
    )
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    io.new_output(f"{prefix}/ext/f.parquet").write(_parquet_bytes())
    proxy.clear()
    for location in (f"{prefix}/w/./x.bin", f"{prefix}/w/../y.bin", f"{prefix}/w//z.bin"):
        with pytest.raises(ValidationError, match="path segment"):
            io.new_output(location).write(b"hello")
        with pytest.raises(ValidationError, match="path segment"):
            io.new_input(location).read()
    with pytest.raises(ValidationError, match="path segment"):
        t.add_files([f"{prefix}/ext/./f.parquet"])
    assert [m for m, _ in proxy.log if m in ("PUT", "POST")] == []
    assert t.refresh().current_snapshot() is None
    t.add_files([f"{prefix}/ext/f.parquet"])
    assert t.scan().to_arrow().num_rows == 2
    local = FileIO()
    local.new_output(f"{tmp_path}/a/../b.bin").write(b"x")  # a local path: resolved as usual
    assert (tmp_path / "b.bin").read_bytes() == b"x"
    bucket, _, key = f"{prefix}/foreign".removeprefix("s3://").partition("/")
    for name in ("./y", "d//x"):
        moto_s3.client().put_object(Bucket=bucket, Key=f"{key}/{name}", Body=b"1")
    io.delete_files(f.location for f in io.list_prefix(f"{prefix}/foreign"))
    assert moto_s3.client().list_objects_v2(Bucket=bucket, Prefix=key)["KeyCount"] == 0


def _parquet_bytes() -> bytes:
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    fields = [
        pa.field(f.name, f.type, metadata={"PARQUET:field_id": str(i)})
        for i, f in enumerate(SCHEMA, start=1)
    ]
    pq.write_table(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=pa.schema(fields)), sink)
    return sink.getvalue().to_pybytes()


# -- partition directories ---------------------------------------------------------------------

VALUES = ["a b", "a+b", "a*b", "x~y", "a/b", "é ü", "100%", "a=b&c", "-_.", "日本"]
#: What Java's ``URLEncoder.encode(value, UTF_8)`` (Iceberg Java's ``PartitionSpec.escape``)
#: gives where PyIceberg's ``quote_plus`` differs: ``*`` kept, ``~`` escaped.
JAVA = {"a*b": "a*b", "x~y": "x%7Ey"}


@pytest.mark.parametrize("value", VALUES)
def test_partition_directories_are_escaped_as_iceberg_java_does(value: str) -> None:
    from pyiceberg.partitioning import PartitionField as PyField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import IdentityTransform as PyIdentity
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField as PyNested
    from pyiceberg.types import StringType as PyString

    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.transforms import IdentityTransform
    from icefloe.write import partition_path

    name = "p q"
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), name))
    got = partition_path(spec, {name: value})
    py_spec = PySpec(PyField(source_id=1, field_id=1000, transform=PyIdentity(), name=name))
    py_schema = PySchema(PyNested(1, name, PyString()))
    expected = py_spec.partition_to_path(Record(value), py_schema)
    if value in JAVA:
        expected = f"p+q={JAVA[value]}"
    assert got == expected


# -- a bucket in another region ---------------------------------------------------------------


@pytest.mark.parametrize("told", [True, False], ids=["region-told", "region-not-told"])
def test_a_bucket_in_another_region_is_named_with_the_setting_to_fix(
    moto_s3: S3Server, proxy: FaultProxy, tmp_path: Path, told: bool
) -> None:
    """S3 answers ``301 PermanentRedirect`` to every request for a bucket of another region
    (moto has no regions: the proxy answers for it, as S3 does, with the bucket's region in
    ``x-amz-bucket-region`` or without it). Reads through icefloe's client and pyarrow's
    raise ``WrongRegionError`` naming the bucket, its region when S3 gave it and
    ``s3.region``, not pyarrow's bare "HTTP status 301"."""
    from icefloe.exceptions import WrongRegionError

    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=moto_s3.fresh_location(),
        **moto_s3.properties(),
    )  # fmt: skip
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA).append(_rows(3))
    t = cat.load_table("db.t")
    data = t.scan().plan_files()[0].data_file.file_path
    bucket = t.location.split("/")[2]
    headers = {"x-amz-bucket-region": "eu-west-1"} if told else {}
    for method in ("GET", "HEAD", "PUT", "POST"):
        proxy.add(Fault(method, rf"^/{bucket}(/|\?|$)", 301, code="PermanentRedirect",
                        headers=headers))  # fmt: skip
    io = FileIO(_properties(moto_s3, proxy))
    moved = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", **_properties(moto_s3, proxy))
    for action in (
        lambda: io.new_input(data).open(size=10),  # icefloe's single GET
        lambda: io.new_input(data).read(),  # pyarrow's HEAD and GET
        lambda: io.new_input(data).length(),
        lambda: io.exists(data),
        lambda: list(io.list_prefix(t.location)),  # pyarrow's ListObjectsV2
        lambda: io.new_output(f"{t.location}/x.bin").write(b"x"),  # icefloe's PUT
        lambda: moved.load_table("db.t").scan().to_arrow(),
    ):
        with pytest.raises(WrongRegionError) as info:
            action()
        text = str(info.value)
        assert info.value.bucket == bucket and f"bucket {bucket!r}" in text
        assert "s3.region" in text and "HTTP status 301" not in text
        assert t.location in text
        if told:
            assert info.value.region == "eu-west-1" and "'eu-west-1'" in text
        else:
            assert info.value.region is None
    cat.close()
    moved.close()


def test_a_redirect_that_is_not_about_regions_is_not_called_one() -> None:
    """A server in front of S3 sending every request elsewhere (301 with a ``Location`` and
    no S3 answer: http to https, say) is not a bucket in another region, and neither is a key
    whose name holds ``PermanentRedirect`` on an endpoint that does not answer."""
    import http.server
    import threading

    from icefloe.exceptions import FileIOError, WrongRegionError

    class Redirect(http.server.BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.send_response(301)
            self.send_header("Location", f"https://{self.headers.get('Host')}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD = do_PUT = answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    props = {
        "s3.region": "us-east-1",
        "s3.access-key-id": "AKIDEXAMPLE",
        "s3.secret-access-key": "not-a-real-secret-0000",
        "s3.path-style-access": "true",
        "s3.connect-timeout": "3",
        "s3.request-timeout": "3",
    }
    try:
        io = FileIO({**props, "s3.endpoint": f"http://127.0.0.1:{server.server_address[1]}"})
        for act in (
            lambda: io.new_input("s3://bkt/a/b.parquet").open(size=10),
            lambda: io.new_output("s3://bkt/a/c.bin").write(b"x"),
        ):
            with pytest.raises(FileIOError, match="301") as info:
                act()
            assert not isinstance(info.value, WrongRegionError)
    finally:
        server.shutdown()
        server.server_close()
    closed = FileIO({**props, "s3.endpoint": f"http://127.0.0.1:{_free_port()}"})
    with pytest.raises(FileIOError, match="did not answer") as info:
        closed.new_input("s3://bkt/docs/PermanentRedirect.json").read()
    assert not isinstance(info.value, WrongRegionError)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
