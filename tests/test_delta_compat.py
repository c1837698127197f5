"""The IcebergCompatV3 checker: each RFC requirement fails on its own, by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.delta import DeltaLog, check_iceberg_compat_v3
from icefloe.exceptions import NotIcebergCompatibleError
from support.delta import PROTOCOL, SCHEMA, DeltaTableWriter, add, commit_info, field, metadata


def table(
    tmp_path: Path,
    protocol: dict[str, Any] | None = None,
    schema: dict[str, Any] | None = None,
    stats: dict[str, Any] | None = None,
    **config: str,
) -> str:
    w = DeltaTableWriter(tmp_path)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": protocol or PROTOCOL},
        {"metaData": metadata(schema, **config)},
        add("a.parquet", version=0, stats=stats),
    )
    return str(tmp_path)


def failures(path: str) -> list[str]:
    return [f.requirement for f in check_iceberg_compat_v3(path).failures]


def test_a_compatible_table_passes(tmp_path: Path) -> None:
    report = check_iceberg_compat_v3(table(tmp_path))
    assert report.ok and report.failures == ()
    report.raise_if_failed()


@pytest.mark.parametrize(
    ("change", "requirement"),
    [
        ({"protocol": dict(PROTOCOL, readerFeatures=["deletionVectors"])}, "column-mapping-reader"),
        ({"protocol": dict(PROTOCOL, minWriterVersion=6)}, "writer-version"),
        (
            {"protocol": dict(PROTOCOL, writerFeatures=["columnMapping", "rowTracking"])},
            "feature-supported",
        ),
        ({"delta.enableIcebergCompatV3": "false"}, "feature-enabled"),
        ({"delta.columnMapping.mode": "none"}, "column-mapping-mode"),
        ({"delta.enableRowTracking": "false"}, "row-tracking"),
        ({"delta.rowTracking.materializedRowIdColumnName": ""}, "row-tracking"),
        ({"delta.enableIcebergCompatV2": "true"}, "no-older-compat"),
        ({"stats": {"minValues": {}}}, "num-records"),
        (
            {
                "schema": {
                    "type": "struct",
                    "fields": [
                        field(
                            "xs",
                            {"type": "array", "elementType": "integer", "containsNull": True},
                            1,
                        )
                    ],
                }
            },
            "nested-ids",
        ),
        (
            {
                "schema": {
                    "type": "struct",
                    "fields": [
                        field(
                            "m",
                            {
                                "type": "map",
                                "keyType": "string",
                                "valueType": "integer",
                                "valueContainsNull": True,
                            },
                            1,
                            {"col-m.key": 2},
                        )
                    ],
                }
            },
            "nested-ids",
        ),
    ],
)
def test_each_requirement_fails_by_name(
    tmp_path: Path, change: dict[str, Any], requirement: str
) -> None:
    protocol = change.pop("protocol", None)
    schema = change.pop("schema", None)
    stats = change.pop("stats", None)
    path = table(tmp_path, protocol, schema, stats, **change)
    assert failures(path) == [requirement]
    with pytest.raises(NotIcebergCompatibleError, match=requirement) as e:
        check_iceberg_compat_v3(DeltaLog(path)).raise_if_failed()
    assert e.value.failures == (requirement,)


def test_reader_version_two_counts_as_column_mapping(tmp_path: Path) -> None:
    proto = dict(PROTOCOL, minReaderVersion=2)
    proto.pop("readerFeatures")
    assert failures(table(tmp_path, proto)) == []


def test_several_failures_are_all_named(tmp_path: Path) -> None:
    path = table(
        tmp_path,
        None,
        None,
        None,
        **{"delta.enableIcebergCompatV3": "false", "delta.columnMapping.mode": "none"},
    )
    assert failures(path) == ["feature-enabled", "column-mapping-mode"]


def test_nested_ids_present(tmp_path: Path) -> None:
    schema = {
        "type": "struct",
        "fields": [
            *SCHEMA["fields"],
            field(
                "deep",
                {
                    "type": "array",
                    "elementType": {
                        "type": "map",
                        "keyType": "string",
                        "valueType": "integer",
                        "valueContainsNull": True,
                    },
                    "containsNull": True,
                },
                4,
                {"col-deep.element": 5, "col-deep.element.key": 6, "col-deep.element.value": 7},
            ),
        ],
    }
    assert failures(table(tmp_path, None, schema)) == []


def test_file_checks_read_the_footers(tmp_path: Path) -> None:
    """``files=True``: partition values materialized, INT64 timestamps, row-tracking ids."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from icefloe.delta import convert  # noqa: F401 (the package imports cleanly)

    schema = {"type": "struct", "fields": [*SCHEMA["fields"], field("ts", "timestamp", 4)]}
    w = DeltaTableWriter(tmp_path)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(schema, ("part",))},
        add("good.parquet", version=0, partition={"col-part": "1"}),
        add("bad.parquet", base_row_id=10, version=0, partition={"col-part": "2"}),
    )
    ts = pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us"))
    good = pa.table({"col-id": [1], "col-name": ["a"], "col-part": [1], "col-ts": ts})
    pq.write_table(good, tmp_path / "good.parquet")
    wrong_id = pa.field("_row-id-col-x", pa.int64(), metadata={b"PARQUET:field_id": b"7"})
    bad = pa.table({"col-id": [2], "col-name": ["b"], "col-ts": ts}).append_column(
        wrong_id, pa.array([5], pa.int64())
    )
    pq.write_table(bad, tmp_path / "bad.parquet", use_deprecated_int96_timestamps=True)
    assert check_iceberg_compat_v3(str(tmp_path)).ok  # the log alone is fine
    report = check_iceberg_compat_v3(str(tmp_path), files=True)
    assert [f.requirement for f in report.failures] == [
        "partition-values-materialized",
        "row-tracking-field-ids",
        "timestamps-int64",
    ]
    assert all("bad.parquet" in f.message for f in report.failures)


def test_delta_written_fixtures_pass_with_file_checks() -> None:
    from support.delta import FIXTURES

    for table in sorted(FIXTURES.glob("*/table")):
        report = check_iceberg_compat_v3(str(table), files=True)
        assert report.ok, (table, report.failures)
