"""``write.object-storage.enabled``: data and delete files in hashed directories.

Iceberg Java's ``ObjectStoreLocationProvider`` (and PyIceberg's) puts a file under
``<data dir>/<4 bits>/<4 bits>/<4 bits>/<8 bits>/<partition path>/<name>``, the bits being the
low 20 of the Murmur3 hash of ``<partition path>/<name>``; ``partitioned-paths=false`` leaves
the partition out and joins the last directory to the name; a data directory outside the table
gets the table's ``<namespace>/<table>`` after the hash. icefloe used to ignore the property.
PyIceberg's location provider is the oracle for every file icefloe writes, vectors recorded from
Iceberg Java 1.12 check the Java-only cases, and Spark with Iceberg Java reads (and writes)
icefloe's table.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType
from icefloe.write.locations import LocationProvider
from support.spark import JavaCatalog
from support.write_util import catalog, checksum, pyiceberg_read

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "p", StringType()),
)
SPEC = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "p"))
ON = {"write.object-storage.enabled": "true"}
HASHED = r"/[01]{4}/[01]{4}/[01]{4}/[01]{8}"


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [f"v{i % 3}" for i in ids]})


def _pyiceberg_location(table: Any, path: str, partition: dict[str, Any] | None) -> str:
    """Where PyIceberg's location provider puts a file of ``path``'s name (without the hash
    digits a layout without partition paths puts before it) and partition."""
    from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
    from pyiceberg.table import StaticTable
    from pyiceberg.table.locations import load_location_provider

    st = StaticTable.from_metadata(table.metadata_location)
    provider = load_location_provider(st.location(), st.properties)
    spec = st.spec()
    key = None
    if spec.fields and partition is not None:
        values = [PartitionFieldValue(f, partition[f.name]) for f in spec.fields]
        key = PartitionKey(field_values=values, partition_spec=spec, schema=st.schema())
    name = re.sub(r"^[01]{8}-", "", path.rsplit("/", 1)[1])
    return provider.new_data_location(name, key)


def _files(table: Any) -> list[tuple[str, dict[str, Any] | None]]:
    f = table.inspect.files()
    parts = f.column("partition").to_pylist() if "partition" in f.column_names else None
    paths = f.column("file_path").to_pylist()
    return list(zip(paths, parts or [None] * len(paths), strict=True))


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("partitioned_paths", [None, "true", "false"])
def test_data_files_go_where_pyiceberg_puts_them(
    tmp_path: Path, partitioned: bool, partitioned_paths: str | None
) -> None:
    props = dict(ON)
    if partitioned_paths is not None:
        props["write.object-storage.partitioned-paths"] = partitioned_paths
    cat = catalog(tmp_path)
    spec = SPEC if partitioned else PartitionSpec()
    t = cat.create_table("ns.t", SCHEMA, partition_spec=spec, properties=props)
    data = _rows(0, 60)
    t.append(data)
    files = _files(t)
    assert len(files) == (3 if partitioned else 1)
    data_dir = f"{t.location.rstrip('/')}/data"
    for path, partition in files:
        assert path == _pyiceberg_location(t, path, partition)
        name = r"00000-0-[0-9a-f-]+-\d{5}\.parquet"
        if partitioned_paths == "false":
            pattern = HASHED + "-" + name
        else:
            pattern = HASHED + (r"/p=v\d" if partitioned else "") + "/" + name
        assert re.fullmatch(re.escape(data_dir) + pattern, path), path
    assert checksum(pyiceberg_read(t)) == checksum(data)
    assert checksum(t.scan().to_arrow()) == checksum(data)


def test_without_the_property_files_stay_in_the_data_directory(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, properties={"write.object-storage.enabled": "false"}
    )
    t.append(_rows(0, 9))
    for path, partition in _files(t):
        assert partition is not None
        assert path == f"{t.location.rstrip('/')}/data/p={partition['p']}/{path.rsplit('/', 1)[1]}"


#: (table location, properties, file name, partition path, the location Iceberg Java 1.12 gave
#: the file), recorded with Spark: the layouts PyIceberg does not have (a data directory
#: outside the table) and a few others.
_JAVA = [
    (
        "/b/warehouse/db/t1",
        ON,
        "00000-0-49806902-c00f-4d73-b6c3-ec96f841587b-0-00001.parquet",
        "",
        "/b/warehouse/db/t1/data/0000/1101/1100/00010100/"
        "00000-0-49806902-c00f-4d73-b6c3-ec96f841587b-0-00001.parquet",
    ),
    (
        "/b/warehouse/db/t1p",
        ON,
        "00000-5-7b861917-3fc1-478c-a14c-8f20e5bccdf2-0-00002.parquet",
        "p=x",
        "/b/warehouse/db/t1p/data/1110/1111/1110/11001011/p=x/"
        "00000-5-7b861917-3fc1-478c-a14c-8f20e5bccdf2-0-00002.parquet",
    ),
    (
        "/b/warehouse/db/t2p",
        {**ON, "write.object-storage.partitioned-paths": "false"},
        "00000-12-dcd0a213-e4b6-4471-8166-b0943576cf12-0-00002.parquet",
        "p=x",
        "/b/warehouse/db/t2p/data/0100/1111/0001/"
        "01010011-00000-12-dcd0a213-e4b6-4471-8166-b0943576cf12-0-00002.parquet",
    ),
    (
        "/b/warehouse/db/t3p",
        {**ON, "write.data.path": "/b/shared"},
        "00000-19-89896934-73c0-4185-b05a-b45cbc9f75f5-0-00002.parquet",
        "p=x",
        "/b/shared/0001/1011/0110/01101111/db/t3p/p=x/"
        "00000-19-89896934-73c0-4185-b05a-b45cbc9f75f5-0-00002.parquet",
    ),
    (
        "/b/warehouse/db/t4",
        {**ON, "write.data.path": "/b/shared", "write.object-storage.partitioned-paths": "false"},
        "00001-22-f104742d-db35-4ea4-bbe1-f4e0c1545287-0-00001.parquet",
        "",
        "/b/shared/1111/0001/0000/10011011/db/t4/"
        "00001-22-f104742d-db35-4ea4-bbe1-f4e0c1545287-0-00001.parquet",
    ),
]


@pytest.mark.parametrize(("location", "props", "name", "partition", "java"), _JAVA)
def test_locations_equal_iceberg_java(
    location: str, props: dict[str, str], name: str, partition: str, java: str
) -> None:
    assert LocationProvider.of(location, props).new_location(name, partition) == java


def test_object_storage_path_and_a_data_path_inside_the_table(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    shared = (tmp_path / "shared").as_uri()
    t = cat.create_table("ns.t", SCHEMA, properties={**ON, "write.object-storage.path": shared})
    t.append(_rows(0, 5))
    [(path, _)] = _files(t)
    # outside the table: the table's namespace and name follow the hash, as in Java
    assert re.fullmatch(re.escape(shared) + HASHED + r"/ns/t/[^/]+\.parquet", path), path
    u = cat.create_table("ns.u", SCHEMA, properties={**ON, "write.data.path": "files"})
    u.append(_rows(0, 5))
    [(path, _)] = _files(u)
    assert re.fullmatch(re.escape(u.location.rstrip("/")) + "/files" + HASHED + r"/[^/]+", path)
    assert path == _pyiceberg_location(u, path, None)
    assert checksum(pyiceberg_read(t)) == checksum(pyiceberg_read(u)) == (5, 10)


@pytest.mark.parametrize("version", [2, 3])
def test_delete_files_go_to_hashed_directories(tmp_path: Path, version: int) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        format_version=version,
        properties={**ON, "write.delete.mode": "merge-on-read"},
    )
    data = _rows(0, 30)
    t.append(data)
    t.delete("id < 4")
    deletes = t.inspect.delete_files().column("file_path").to_pylist()
    assert deletes
    data_dir = re.escape(f"{t.location.rstrip('/')}/data")
    for path in deletes:
        assert re.fullmatch(data_dir + HASHED + r"/[^/]+-deletes\.(parquet|puffin)", path), path
    assert checksum(pyiceberg_read(t)) == checksum(t.scan().to_arrow()) == (26, 435 - 6)


def test_orphan_removal_finds_files_in_hashed_directories(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties=ON)
    data = _rows(0, 30)
    t.append(data)
    live = [p for p, _ in _files(t)]
    assert all(re.search(HASHED + "/p=v", p) for p in live)
    root = Path(t.location.removeprefix("file://")) / "data"
    stray = root / "0101" / "0110" / "1001" / "10110010" / "p=v1" / "stray.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"x")
    old = time.time() - 7 * 86400
    for f in [stray, *(Path(p.removeprefix("file://")) for p in live)]:
        os.utime(f, (old, old))
    orphans = t.remove_orphan_files(older_than=int(time.time() * 1000))
    assert [o.removeprefix("file://") for o in orphans] == [str(stray)]
    assert not stray.exists()
    assert all(Path(p.removeprefix("file://")).exists() for p in live)
    assert checksum(t.scan().to_arrow()) == checksum(data)


@pytest.mark.spark
@pytest.mark.interop
def test_iceberg_java_reads_and_writes_the_layout(iceberg_spark: JavaCatalog) -> None:
    """Spark with Iceberg Java reads icefloe's object-storage table, appends to it in the same
    layout (the locations icefloe computes for Java's file names), and icefloe reads it all."""
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        SCHEMA,
        partition_spec=SPEC,
        format_version=2,
        properties={**ON, "write.delete.mode": "merge-on-read"},
    )
    t.append(_rows(0, 30))
    t.delete("id < 4")
    got = iceberg_spark.sql("SELECT count(*) AS n, sum(id) AS s FROM {c}.db.t").collect()[0]
    assert (got["n"], got["s"]) == (26, 435 - 6)
    before = {p for p, _ in _files(t)}
    iceberg_spark.sql("INSERT INTO {c}.db.t VALUES (100, 'v0'), (101, 'java')")
    t.refresh()
    provider = LocationProvider.of(t.location, t.metadata.properties)
    java_files = [(p, part) for p, part in _files(t) if p not in before]
    assert len(java_files) == 2
    for path, part in java_files:
        assert part is not None
        expected = provider.new_location(path.rsplit("/", 1)[1], f"p={part['p']}")
        assert path.removeprefix("file:") == expected.removeprefix("file:"), path
    assert checksum(t.scan().to_arrow()) == (28, 435 - 6 + 201)


def test_a_failed_spark_job_cleans_its_files_in_every_layout(tmp_path: Path) -> None:
    # the Spark writers' clean-up finds a job's files by name, with or without the hashed
    # digits a layout without partition paths puts before the name
    pytest.importorskip("pyspark")
    from icefloe.spark.writing import cleanup_job
    from icefloe.write.writer import WriteOptions, write_data_files

    for paths in ("true", "false"):
        props = {**ON, "write.object-storage.partitioned-paths": paths}
        cat = catalog(tmp_path / paths)
        t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties=props)
        rows = _rows(0, 30)
        mine = write_data_files(t.metadata, t.io, rows, options=WriteOptions(task_id=123400001))
        other = write_data_files(t.metadata, t.io, rows, options=WriteOptions(task_id=999900001))
        cleanup_job(t, 1234)
        assert not any(os.path.exists(f.file_path.removeprefix("file://")) for f in mine)
        assert all(os.path.exists(f.file_path.removeprefix("file://")) for f in other)
