"""Per-partition entries in snapshot summaries (``write.summary.partition-limit``): written when
few enough partitions change, counted per partition, named by the reference's partition paths,
and equal to what Iceberg Java writes for the same rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.transforms import parse_transform
from icefloe.write.partition_names import human_partition_value
from support.spark import JavaCatalog

UTC = dt.timezone.utc
ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "ts": pa.array(
            [
                dt.datetime(2024, 1, 1, 5),
                dt.datetime(2024, 1, 1, 6),
                dt.datetime(2024, 1, 2),
                None,
                dt.datetime(1969, 12, 31, 23),
            ],
            pa.timestamp("us"),
        ),
        "s": pa.array(["a b", "a b", "x/y~*=é", None, "a b"], pa.string()),
    }
)


def _table(tmp_path: Path, limit: str | None, version: int = 2, spec: bool = True) -> Any:
    cat = load_catalog(
        "c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh")
    )
    cat.create_namespace("n")
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    if limit is not None:
        props["write.summary.partition-limit"] = limit
    t = cat.create_table("n.t", ROWS.schema, properties=props)
    if spec:
        t.update_spec().add_field("ts", "day").add_field("s", "identity").commit()
    return t


def _partition_entries(summary: dict[str, str]) -> dict[str, dict[str, str]]:
    return {
        k.removeprefix("partitions."): dict(p.split("=", 1) for p in v.split(","))
        for k, v in summary.items()
        if k.startswith("partitions.")
    }


def test_each_changed_partition_gets_its_counts(tmp_path: Path) -> None:
    t = _table(tmp_path, "10")
    t.append(ROWS)
    summary = dict(t.current_snapshot().summary.properties)
    assert summary["partition-summaries-included"] == "true"
    assert summary["changed-partition-count"] == "4"
    entries = _partition_entries(summary)
    assert set(entries) == {
        "ts_day=2024-01-01/s=a+b",
        "ts_day=2024-01-02/s=x%2Fy%7E*%3D%C3%A9",
        "ts_day=null/s=null",
        "ts_day=1969-12-31/s=a+b",
    }
    assert entries["ts_day=2024-01-01/s=a+b"]["added-records"] == "2"
    # Each entry's counts are the files the snapshot added to that partition, in the
    # reference's key order.
    files = t.inspect.files()
    for f in files.to_pylist():
        part = f["partition"]
        day = "null" if part["ts_day"] is None else part["ts_day"].isoformat()
        key = next(k for k in entries if k.startswith(f"ts_day={day}/"))
        assert entries[key]["added-files-size"] == str(f["file_size_in_bytes"])
        assert entries[key]["added-data-files"] == "1"
    raw = summary["partitions.ts_day=2024-01-01/s=a+b"]
    assert [p.split("=")[0] for p in raw.split(",")] == [
        "added-data-files",
        "added-records",
        "added-files-size",
    ]


def test_deletes_and_dvs_are_counted_in_their_partition(tmp_path: Path) -> None:
    t = _table(tmp_path, "10", version=3)
    t.append(ROWS)
    t.delete("id = 1")
    entries = _partition_entries(dict(t.current_snapshot().summary.properties))
    assert list(entries) == ["ts_day=2024-01-01/s=a+b"]
    dv = entries["ts_day=2024-01-01/s=a+b"]
    assert dv["added-dvs"] == "1" and dv["added-delete-files"] == "1"
    assert dv["added-position-deletes"] == "1"
    t.delete("s = 'x/y~*=é'")  # the whole file: removed, not deleted by a DV
    entries = _partition_entries(dict(t.current_snapshot().summary.properties))
    assert entries == {
        "ts_day=2024-01-02/s=x%2Fy%7E*%3D%C3%A9": {
            "deleted-data-files": "1",
            "deleted-records": "1",
            "removed-files-size": entries["ts_day=2024-01-02/s=x%2Fy%7E*%3D%C3%A9"][
                "removed-files-size"
            ],
        }
    }


@pytest.mark.parametrize("limit", [None, "0", "3"])
def test_no_entries_at_or_over_the_limit(tmp_path: Path, limit: str | None) -> None:
    t = _table(tmp_path, limit)
    t.append(ROWS)  # four partitions
    summary = dict(t.current_snapshot().summary.properties)
    assert summary["changed-partition-count"] == "4"
    assert "partition-summaries-included" not in summary
    assert not _partition_entries(summary)


def test_unpartitioned_table_marks_summaries_without_entries(tmp_path: Path) -> None:
    t = _table(tmp_path, "5", spec=False)
    t.append(ROWS)
    summary = dict(t.current_snapshot().summary.properties)
    assert summary["changed-partition-count"] == "1"
    assert summary["partition-summaries-included"] == "true"
    assert not _partition_entries(summary)


def test_human_values_of_times_follow_the_reference() -> None:
    def human(type_: str, value: Any) -> str:
        return human_partition_value(PartitionField(1, 1000, parse_transform(type_), "p"), value)

    # timestamps as Java 1.7 and later print them (ISO_LOCAL_DATE_TIME, "+00:00" when zoned)
    assert human("identity", dt.datetime(2024, 1, 1)) == "2024-01-01T00:00:00"
    assert human("identity", dt.datetime(2024, 1, 1, 1, 2, 3)) == "2024-01-01T01:02:03"
    assert human("identity", dt.datetime(2024, 1, 1, 0, 0, 0, 5000)) == "2024-01-01T00:00:00.005"
    assert human("identity", dt.datetime(2024, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == (
        "2024-01-01T00:00:01.000005+00:00"
    )
    assert human("identity", dt.time(10, 30)) == "10:30"
    assert PartitionSpec().is_unpartitioned
    # hours of years before 1000 padded to four digits, as Java's and PyIceberg's
    first = (dt.datetime(1, 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(hours=1)
    assert human("hour", first) == "0001-01-01-00"
    assert human("hour", first + 5) == "0001-01-01-05"


def test_zoned_timestamp_partitions_are_named_as_java_names_them(tmp_path: Path) -> None:
    """Identity partitions of a zoned timestamp ended in ``Z`` (Java before 1.7); Iceberg
    Java 1.7 and later and PyIceberg 0.12 write ``+00:00``: file directories and the summary's
    partition keys carry the same name as theirs."""
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import TimestamptzType

    cat = load_catalog(
        "z", type="sql", uri=f"sqlite:///{tmp_path}/z.db", warehouse=str(tmp_path / "wh")
    )
    cat.create_namespace("n")
    ts = dt.datetime(2017, 12, 1, 18, 12, 55, 38194, tzinfo=dt.UTC)
    data = pa.table({"ts": pa.array([ts], pa.timestamp("us", "UTC"))})
    t = cat.create_table("n.z", data.schema, properties={"write.summary.partition-limit": "10"})
    t.update_spec().add_field("ts", "identity").commit()
    t.append(data)
    micros = (ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    theirs = IdentityTransform().to_human_string(TimestamptzType(), micros)
    assert theirs == "2017-12-01T18:12:55.038194+00:00"
    (path,) = t.inspect.files()["file_path"].to_pylist()
    assert "/ts=2017-12-01T18%3A12%3A55.038194%2B00%3A00/" in path, path
    keys = [k for k in t.current_snapshot().summary.properties if k.startswith("partitions.")]
    assert keys == ["partitions.ts=2017-12-01T18%3A12%3A55.038194%2B00%3A00"]


def test_human_values_of_nanosecond_timestamps_keep_their_nanoseconds() -> None:
    """Java prints as many fraction digits as a value needs: timestamps that differ in their
    nanoseconds name different partitions."""
    import pandas as pd

    from icefloe.types import TimestampNanoType, TimestamptzNanoType

    pf = PartitionField(1, 1000, parse_transform("identity"), "p")
    assert human_partition_value(pf, pd.Timestamp("1969-12-31T23:59:59.999999999")) == (
        "1969-12-31T23:59:59.999999999"
    )
    assert human_partition_value(pf, pd.Timestamp("2024-01-01T00:00:00.000000001", tz="UTC")) == (
        "2024-01-01T00:00:00.000000001+00:00"
    )
    assert human_partition_value(pf, pd.Timestamp("2024-01-01T00:00:00.5")) == (
        "2024-01-01T00:00:00.5"
    )
    # as ints of nanoseconds (how manifest bounds decode), given the field's type
    assert human_partition_value(pf, -1, TimestampNanoType()) == "1969-12-31T23:59:59.999999999"
    assert human_partition_value(pf, 1_000, TimestamptzNanoType()) == (
        "1970-01-01T00:00:00.000001+00:00"
    )


def _ntz(value: dt.datetime | None) -> str:
    return "NULL" if value is None else f"TIMESTAMP_NTZ '{value.isoformat(sep=' ')}'"


def _string(value: str | None) -> str:
    return "NULL" if value is None else f"'{value}'"


@pytest.mark.spark
def test_the_same_entries_as_iceberg_java(
    spark: Any, iceberg_spark: JavaCatalog, tmp_path: Path
) -> None:
    """Spark with Iceberg Java appends the rows and deletes a partition's files in a table with
    the limit set; icefloe does the same in a twin table: the same partition paths and the same
    record and file counts (file sizes differ with the writer)."""
    c = iceberg_spark.name
    spark.sql(
        f"CREATE TABLE {c}.db.t (id BIGINT, ts TIMESTAMP_NTZ, s STRING) USING iceberg "
        "PARTITIONED BY (days(ts), s) "
        "TBLPROPERTIES ('format-version'='2', 'write.summary.partition-limit'='10')"
    )
    values = ", ".join(f"({r['id']}, {_ntz(r['ts'])}, {_string(r['s'])})" for r in ROWS.to_pylist())
    spark.sql(f"INSERT INTO {c}.db.t VALUES {values}")
    spark.sql(f"DELETE FROM {c}.db.t WHERE s = 'x/y~*=é'")
    java = iceberg_spark.icefloe().load_table("db.t")
    ours = _table(tmp_path, "10")
    ours.append(ROWS)

    def strip(entries: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        return {k: {n: v for n, v in e.items() if "size" not in n} for k, e in entries.items()}

    for back in (1, 0):
        snap_j = java.snapshots()[-1 - back] if back else java.current_snapshot()
        if not back:
            ours.delete("s = 'x/y~*=é'")
        snap_o = ours.current_snapshot()
        summary_j = dict(snap_j.summary.properties)
        summary_o = dict(snap_o.summary.properties)
        assert strip(_partition_entries(summary_o)) == strip(_partition_entries(summary_j))
        for key in ("partition-summaries-included", "changed-partition-count"):
            assert summary_o.get(key) == summary_j.get(key)
    assert pc.sum(ours.scan().to_arrow()["id"]).as_py() == 1 + 2 + 4 + 5


@pytest.mark.parametrize(
    "key", ["added-records", "total-data-files", "operation", "partitions.s=a", ""]
)
def test_snapshot_properties_cannot_replace_what_the_commit_computes(
    tmp_path: Path, key: str
) -> None:
    """A snapshot property named as a computed summary key (a count, a total, the operation,
    a partition summary) is refused before anything is written, as Java's summary builder
    refuses a duplicate key; other names, ``wap.id`` included, are kept as given."""
    t = _table(tmp_path, None)
    t.append(ROWS)
    before = t.refresh().current_snapshot()
    with pytest.raises(ValidationError, match="snapshot property"):
        t.append(ROWS, snapshot_properties={key: "1000000"})
    assert t.refresh().current_snapshot() == before
    assert t.scan().count() == ROWS.num_rows
    t.append(ROWS, snapshot_properties={"added-by": "etl", "wap.id": "w1"})
    summary = t.refresh().current_snapshot().summary.properties
    assert summary["added-by"] == "etl" and summary["wap.id"] == "w1"
    assert summary["added-records"] == "5" and summary["total-records"] == "10"
