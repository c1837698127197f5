"""FileIO over pyarrow.fs: local paths and file:// URIs, exclusive create, errors, locations."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import AlreadyExistsError, NotFoundError, ValidationError
from icefloe.io import FileIO
from icefloe.properties import InvalidPropertyWarning
from icefloe.table_paths import (
    absolute_location,
    comparable_locations,
    data_location,
    metadata_file_order,
    metadata_file_version,
    metadata_location,
    new_metadata_file_location,
    same_file_locations,
)


@pytest.mark.parametrize("uri", [False, True])
def test_write_read_exists_delete(tmp_path: Path, uri: bool) -> None:
    io = FileIO()
    loc = (tmp_path / "a" / "b.bin").as_uri() if uri else str(tmp_path / "a" / "b.bin")
    out = io.new_output(loc)
    assert not out.exists()
    out.write(b"hello")
    assert (tmp_path / "a" / "b.bin").read_bytes() == b"hello"
    inp = io.new_input(loc)
    assert inp.exists() and inp.length() == 5
    assert inp.read() == b"hello"
    with inp.open() as f:
        f.seek(1)
        assert f.read(3) == b"ell"
    io.delete(loc)
    assert not io.exists(loc)
    with pytest.raises(NotFoundError, match=r"b\.bin"):
        io.delete(loc)
    with pytest.raises(NotFoundError, match=r"b\.bin"):
        io.new_input(loc).read()
    assert io.delete_quietly(loc) is False


def test_create_is_exclusive(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "x" / "v1.metadata.json")
    with io.new_output(loc).create() as stream:
        stream.write(b"first")
    with pytest.raises(AlreadyExistsError, match=r"v1\.metadata\.json"):
        io.new_output(loc).create()
    with pytest.raises(AlreadyExistsError):
        io.new_output(loc).write(b"second")
    assert io.new_input(loc).read() == b"first"
    with io.new_output(loc).create(overwrite=True) as stream:
        stream.write(b"third")
    assert io.new_input(loc).read() == b"third"
    io.new_output(loc).write(b"fourth", overwrite=True)
    assert io.new_input(loc).read() == b"fourth"
    # no temporary files are left behind
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["v1.metadata.json"]


@pytest.mark.parametrize("error", [ValueError("the producer failed"), OSError("disk full")])
def test_a_failed_overwrite_keeps_the_previous_file(tmp_path: Path, error: Exception) -> None:
    """A write replacing a file that fails half-way (its producer raising, or the disk) leaves
    the previous content as it was, and no temporary file; before, the file was truncated in
    place and then deleted."""
    io = FileIO()
    loc = str(tmp_path / "d" / "version-hint.text")
    io.new_output(loc).write(b"old content")
    with pytest.raises(Exception) as info, io.new_output(loc).writing(overwrite=True) as stream:
        stream.write(b"new" * 100_000)
        raise error
    assert "producer" in str(info.value) or "disk full" in str(info.value)
    assert (tmp_path / "d" / "version-hint.text").read_bytes() == b"old content"
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["version-hint.text"]
    with io.new_output(loc).writing(overwrite=True) as stream:
        stream.write(b"replaced")
    assert io.new_input(loc).read() == b"replaced"
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["version-hint.text"]


def test_exclusive_write_has_one_winner(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "race.json")
    wins: list[int] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            io.new_output(loc).write(str(i).encode())
            wins.append(i)
        except AlreadyExistsError:
            pass

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert io.new_input(loc).read() == str(wins[0]).encode()


def test_list_prefix_and_dirs(tmp_path: Path) -> None:
    io = FileIO()
    root = tmp_path.as_uri()
    for name in ["t/metadata/v1.metadata.json", "t/data/a.parquet", "t/data/p=1/b.parquet"]:
        io.new_output(f"{root}/{name}").write(b"xx")
    found = sorted(f.location for f in io.list_prefix(f"{root}/t"))
    assert found == [
        f"{root}/t/data/a.parquet",
        f"{root}/t/data/p=1/b.parquet",
        f"{root}/t/metadata/v1.metadata.json",
    ]
    assert all(f.size == 2 for f in io.list_prefix(f"{root}/t"))
    assert list(io.list_prefix(f"{root}/missing")) == []
    assert io.list_dir(f"{root}/t") == [("data", True), ("metadata", True)]
    assert io.is_dir(f"{root}/t/data") and not io.is_dir(f"{root}/t/data/a.parquet")
    io.delete_prefix(f"{root}/t/data")
    assert not io.is_dir(f"{root}/t/data")
    io.delete_prefix(f"{root}/t/data")  # missing is fine


def test_bad_locations() -> None:
    io = FileIO()
    with pytest.raises(ValidationError, match="ftp"):
        io.new_input("ftp://host/x").read()
    with pytest.raises(ValidationError, match="empty"):
        io.exists("")
    with pytest.raises(ValidationError, match="bucket"):
        io.resolve("s3:///key")


def test_s3_properties_configure_the_filesystem() -> None:
    io = FileIO(
        {
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.access-key-id": "ak",
            "s3.secret-access-key": "sk",
            "s3.region": "eu-west-3",
            "s3.path-style-access": "true",
        }
    )
    fs, path = io.resolve("s3://bucket/warehouse/t/metadata/v1.metadata.json")
    assert isinstance(fs, pafs.S3FileSystem)
    assert path == "bucket/warehouse/t/metadata/v1.metadata.json"
    assert fs.region == "eu-west-3"
    # The same file system object is reused for every bucket of the scheme.
    assert io.resolve("s3a://other/x")[0] is not fs  # another scheme, another cache entry
    assert io.resolve("s3://other/x")[0] is fs
    reduced = repr(fs.__reduce__())
    assert "127.0.0.1:9000" in reduced and "'http'" in reduced


def test_location_rules() -> None:
    assert metadata_location("s3://b/t/", {}) == "s3://b/t/metadata"
    assert data_location("s3://b/t", {}) == "s3://b/t/data"
    props = {"write.metadata.path": "s3://m/meta/", "write.data.path": "s3://d/data"}
    assert metadata_location("s3://b/t", props) == "s3://m/meta"
    assert data_location("s3://b/t", props) == "s3://d/data"
    assert data_location("s3://b/t", {"write.object-storage.path": "s3://o"}) == "s3://o"
    loc = new_metadata_file_location("file:///w/t", {}, 3)
    assert loc.startswith("file:///w/t/metadata/00003-") and loc.endswith(".metadata.json")
    assert metadata_file_version(loc) == 3
    gz = new_metadata_file_location("/w/t", {"write.metadata.compression-codec": "gzip"}, 12)
    assert gz.endswith(".gz.metadata.json") and metadata_file_version(gz) == 12
    assert metadata_file_version("/w/t/metadata/v7.metadata.json") == 7
    assert metadata_file_version("/w/t/metadata/v7.gz.metadata.json") == 7
    assert metadata_file_version("/w/t/metadata/snap-1.avro") is None
    # the stricter reading that orders two versions of a table (Table objects shared by threads)
    assert metadata_file_order(loc) == ("file:///w/t/metadata", "numbered", 3)
    assert metadata_file_order(gz) == ("/w/t/metadata", "numbered", 12)
    assert metadata_file_order("/w/t/metadata/v7.gz.metadata.json") == (
        "/w/t/metadata",
        "hadoop",
        7,
    )
    assert metadata_file_order("/w/t/metadata/v7.metadata.json.gz") == (
        "/w/t/metadata",
        "hadoop",
        7,
    )
    # a file named by a bare UUID whose first group is all digits carries no version
    bare = "/w/t/metadata/12345678-9abc-4def-8123-456789abcdef.metadata.json"
    assert metadata_file_version(bare) == 12345678 and metadata_file_order(bare) is None
    assert metadata_file_order("/w/t/metadata/00003-x.metadata.json") is None
    assert metadata_file_order("/w/t/metadata/snap-1.avro") is None
    # Every commit reads the codec: a bad stored value warns and writes plain JSON.
    with pytest.warns(InvalidPropertyWarning, match="compression-codec='zstd'"):
        plain = new_metadata_file_location("/w/t", {"write.metadata.compression-codec": "zstd"}, 1)
    assert not plain.endswith(".gz.metadata.json")


def test_local_locations_are_made_plain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A table's location is stored for every engine: ``~`` expanded, relative paths made
    absolute, ``.`` and ``..`` resolved (DuckDB opens no path through them); other file
    systems' URIs are kept as given."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert absolute_location("/w/a/../t/./x/") == "/w/t/x"
    assert absolute_location("~/w/t") == str(tmp_path / "home" / "w" / "t")
    assert absolute_location("w/../v/t") == str(tmp_path / "v" / "t")
    assert absolute_location("file:///w/a/../t") == "file:///w/t"
    assert absolute_location("file:///w/a#b") == "file:///w/a#b"
    assert absolute_location("s3://b/a/../t") == "s3://b/a/../t"


def test_locations_compared_as_files() -> None:
    """One file however a location spells it; another bucket is another file (the lenient
    form, for files listed on one file system, drops scheme and bucket)."""
    spellings = ["file:///w/t//f.parquet", "/w/t/f.parquet", "file:/w/t/f.parquet"]
    assert set(same_file_locations(pa.array(spellings)).to_pylist()) == {"/w/t/f.parquet"}
    buckets = ["s3://a/t/f", "s3://b/t/f", "s3a://a/t//f", "gs://a/t/f"]
    assert same_file_locations(pa.array(buckets)).to_pylist() == [
        "s3://a/t/f",
        "s3://b/t/f",
        "s3://a/t/f",
        "gs://a/t/f",
    ]
    assert set(comparable_locations(pa.array(buckets)).to_pylist()) == {"/t/f"}


def test_a_warehouse_under_home_holds_database_and_tables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from icefloe.catalog import load_catalog
    from icefloe.catalog.hadoop import HadoopCatalog

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    cat = load_catalog("t", warehouse="~/wh/../w")
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    assert t.location == str(tmp_path / "home" / "w" / "db" / "t")
    assert (tmp_path / "home" / "w" / "icefloe_catalog.db").is_file()
    hadoop = HadoopCatalog("h", warehouse="~/h")
    hadoop.create_namespace("db")
    assert hadoop.create_table("db.t", pa.schema([("id", pa.int64())])).location == str(
        tmp_path / "home" / "h" / "db" / "t"
    )
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("char", ["\t", "\r", "\n", "\x01", "\x1f", "\x7f"])
@pytest.mark.parametrize(
    "location",
    [
        "s3://b/wh{}x/t",
        "s3a://b{}/t",
        "gs://b/{}",
        "file:///tmp/a{}b",
        "abfss://c@acct.dfs.core.windows.net/w{}",
        "hdfs://nn/w{}",
        "s{}3://b/x",
    ],
)
def test_control_characters_in_uris_are_refused(location: str, char: str) -> None:
    """urlparse drops tab, CR and LF from a URI: a location holding a control character would
    be written under another key than the one recorded, so any URI with one is refused, named
    with the character visible."""
    location = location.format(char)
    with pytest.raises(ValidationError, match="control character") as info:
        FileIO().resolve(location)
    assert repr(location) in str(info.value)


def test_control_characters_in_plain_local_paths_are_kept(tmp_path: Path) -> None:
    """A plain local path is not parsed as a URI: a tab or newline in it is the file name's."""
    from icefloe.catalog import load_catalog

    warehouse = str(tmp_path / "wh\tx\ny")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse)
    cat.create_namespace("db")
    cat.create_table("db.t", pa.schema([("id", pa.int64())])).append(pa.table({"id": [1, 2]}))
    table = cat.load_table("db.t")
    assert table.metadata_location.startswith(warehouse + "/db/t/metadata/")
    assert Path(table.metadata_location).is_file()
    assert table.scan().to_arrow().num_rows == 2
    assert any((tmp_path / "wh\tx\ny" / "db" / "t" / "data").iterdir())


@settings(max_examples=300, deadline=None)
@given(
    path=st.lists(
        st.text(alphabet=st.characters(blacklist_characters="/\x00"), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    ),
    scheme=st.sampled_from(["file://", "FILE://", "s3://", "S3a://", "", "oss://", "gs://"]),
)
def test_fast_location_parsing_agrees_with_urlparse(path: list[str], scheme: str) -> None:
    """``resolve`` of ``file:///...`` and the S3 check skip ``urlparse`` (called once per file
    read): they must give what it gives, ``?`` and ``#`` taken as part of the path (see
    :func:`icefloe.io.parse_location`)."""
    import os

    from icefloe.io import parse_location as urlparse

    location = scheme + "/" + "/".join(path)
    io = FileIO({"s3.access-key-id": "k", "s3.secret-access-key": "s", "s3.region": "r"})
    parsed = urlparse(location)
    is_s3 = parsed.scheme.lower() in ("s3", "s3a", "s3n", "oss")
    assert (io.s3_client(location) is not None) == is_s3
    if scheme.lower() == "file://":
        if any(ord(c) < 32 or ord(c) == 127 for c in location):  # urlparse drops some of them
            with pytest.raises(ValidationError, match="control character"):
                io.resolve(location)
        else:
            assert io.resolve(location)[1] == os.path.abspath(parsed.path)


def test_errors_of_huge_locations_are_short(tmp_path: Path) -> None:
    """A location of megabytes (an identity partition of a huge value) is named in part."""
    from icefloe.exceptions import FileIOError, NotFoundError

    huge = str(tmp_path / ("x" * 300_000))
    with pytest.raises((FileIOError, NotFoundError)) as info:
        FileIO().new_output(f"{huge}/f.parquet").write(b"data")
    assert len(str(info.value)) < 2_000 and "characters]" in str(info.value)


def test_repr_hides_every_kind_of_secret() -> None:
    """Keys, connection strings and secrets in a URL's query stay out of ``repr``."""
    secret = "SUPERSECRET123"
    io = FileIO(
        {
            "uri": f"postgresql://u:{secret}@host/db?user=u&password={secret}&sslmode=require",
            "adls.connection-string": f"AccountName=a;AccountKey={secret}",
            "s3.sse.key": secret,
            "private-key": secret,
            "gcs.oauth2.token": secret,
            "s3.region": "eu-west-1",
        }
    )
    text = repr(io)
    assert secret not in text
    assert "eu-west-1" in text and "sslmode=require" in text


@pytest.mark.parametrize("name", ["q?x", "h#x", "a?b#c", "p%3Fq"])
def test_query_and_fragment_characters_are_part_of_a_location(tmp_path: Path, name: str) -> None:
    """``?`` and ``#`` in a location are characters of the file name, as in Hadoop's paths
    (Iceberg Java writes a table at ``.../q?x/t`` there): a table at such a location keeps
    every file under it, and nothing is written anywhere else."""
    from icefloe.catalog import load_catalog

    wh = tmp_path / "wh"
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=wh.as_uri())
    cat.create_namespace("db")
    location = f"file://{wh}/{name}/t"
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]), location=location)
    t.append(pa.table({"id": [1, 2, 3]}))
    t.delete("id = 2")
    assert sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 3]
    written = [p for p in wh.rglob("*") if p.is_file()]
    assert written and all(p.is_relative_to(wh / name / "t") for p in written), written
    assert Path(t.refresh().metadata_location.removeprefix("file://")).is_file()
    cat.drop_table("db.t", purge=True)
    assert not [p for p in wh.rglob("*") if p.is_file()]


def test_a_temporary_file_that_cannot_be_removed_does_not_fail_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the file-system catalog the link is the commit: an error removing the temporary
    file after it escaped raw, and a caller repeating the "failed" commit duplicated it."""
    import errno
    import os

    unlink = os.unlink

    def failing(path: str, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".tmp"):
            raise OSError(errno.EIO, "Input/output error", path)
        unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", failing)
    target = tmp_path / "a.json"
    FileIO().new_output(str(target)).write(b"{}")
    assert target.read_bytes() == b"{}"
    # a failed write still reports its own error, not the clean-up's
    with pytest.raises(AlreadyExistsError):
        FileIO().new_output(str(target)).write(b"[]")
    assert target.read_bytes() == b"{}"


def test_a_directory_that_cannot_be_synced_after_the_link_is_an_unknown_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file exists once linked; a failing directory sync after that is not a failure
    (nothing may delete the file as if the write had not happened), so the file-system
    catalog reports the commit's state as unknown and keeps it."""
    import icefloe.io.files as io_module
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.exceptions import CommitStateUnknownError, UnknownWriteStateError

    def failing(paths: list[str]) -> None:
        # the directory of a new file b.json or of the table's new version file only
        if any((Path(p) / n).exists() for p in paths for n in ("b.json", "v2.metadata.json")):
            raise OSError(5, "Input/output error")

    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    monkeypatch.setattr(io_module, "sync_directories", failing)
    target = tmp_path / "b.json"
    with pytest.raises(UnknownWriteStateError, match="could not be synced"):
        FileIO().new_output(str(target)).write(b"{}")
    assert target.read_bytes() == b"{}"
    with pytest.raises(CommitStateUnknownError):
        t.append(pa.table({"id": pa.array([1], pa.int64())}))
    monkeypatch.undo()
    assert cat.load_table("db.t").scan().to_arrow().column("id").to_pylist() == [1]


def test_a_block_that_raises_leaves_no_local_file(tmp_path: Path) -> None:
    io = FileIO()
    location = f"file://{tmp_path}/f.bin"
    failed = pytest.raises(ValueError, match="the producer failed")
    with failed, io.new_output(location).writing() as stream:
        stream.write(b"x" * 1000)
        raise ValueError("the producer failed")
    assert not (tmp_path / "f.bin").exists()
    with io.new_output(location).writing() as stream:  # and the name is free again
        stream.write(b"ok")
    assert (tmp_path / "f.bin").read_bytes() == b"ok"
