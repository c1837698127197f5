"""The counters of a scan plan (``icefloe.scan.metrics``), as scan reports carry them: equal to
what the plan's tasks hold, for equality deletes, position deletes, pruned manifests and a
limit that stops planning early; and the hook that hands a report to the table's catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.scan.metrics import ScanReport, plan_result_counts
from icefloe.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int64())])


def _table(tmp_path: Path, version: int) -> Table:
    cat = SqlCatalog("m", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        SCHEMA,
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    with t.update_spec() as s:
        s.add_field("p")
    for p in range(4):  # one manifest per append, one partition value each
        ids = [p * 10 + i for i in range(5)]
        t.append(pa.table({"id": ids, "p": [p] * 5}, schema=SCHEMA))
    return t


@pytest.mark.parametrize("version", [2, 3])
def test_counters_equal_the_tasks(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    t.delete("id = 1")  # a position delete (v2) or a deletion vector (v3)
    t.delete_by_keys(pa.table({"id": pa.array([12, 13], pa.int64())}), ["id"])  # equality
    t = t.refresh()
    for flt, scanned in (("true", 4), ("p = 1", 1), ("p >= 2", 2)):
        scan = t.scan(row_filter=flt)
        tasks = scan.plan_files()
        m = plan_result_counts(scan.plan())
        deletes = [d for task in tasks for d in task.delete_files]
        assert m["result-data-files"] == len(tasks)
        assert m["result-delete-files"] == len(deletes)
        assert m["total-file-size-in-bytes"] == sum(x.data_file.file_size_in_bytes for x in tasks)
        sizes = [
            d.content_size_in_bytes if d.is_deletion_vector else d.file_size_in_bytes
            for d in deletes
        ]
        assert m["total-delete-file-size-in-bytes"] == sum(sizes)
        assert m["total-data-manifests"] == 4
        assert (m["scanned-data-manifests"], m["skipped-data-manifests"]) == (scanned, 4 - scanned)
        assert m["skipped-data-files"] == 0  # one file per manifest, pruned whole
        assert m["total-delete-manifests"] == 2
        kept = {d.file_path + str(d.content_offset) for d in deletes}
        assert m["indexed-delete-files"] >= len(kept)
        assert (
            m["indexed-delete-files"]
            == m["dvs"] + m["positional-delete-files"] + m["equality-delete-files"]
        )
    whole = plan_result_counts(t.scan().plan())
    kinds = (whole["dvs"], whole["positional-delete-files"], whole["equality-delete-files"])
    assert kinds == ((1, 0, 1) if version == 3 else (0, 1, 1))
    assert whole["result-delete-files"] == 2  # one for p=0's file, one for p=1's


def test_limit_stops_planning_and_counts_what_it_read(tmp_path: Path) -> None:
    t = _table(tmp_path, 2)
    scan = t.scan(limit=3)
    tasks = scan.plan_files()
    m = plan_result_counts(scan.plan())
    assert m["result-data-files"] == len(tasks) < 4
    assert m["scanned-data-manifests"] + m["skipped-data-manifests"] == 4
    assert m["scanned-data-manifests"] < 4


def test_reports_reach_the_tables_catalog_and_never_fail_the_scan(tmp_path: Path) -> None:
    t = _table(tmp_path, 2)
    got: list[ScanReport] = []

    class Reporting:
        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def report_scan(self, table: Any, report: ScanReport) -> None:
            if self.fail:
                raise RuntimeError("the metrics service is down")
            got.append(report)

        def __getattr__(self, name: str) -> Any:
            return getattr(t.catalog, name)

    view = Table(t.identifier, t.metadata, t.metadata_location, t.io, Reporting(False))
    view.scan(row_filter="p = 2", selected_fields=("p",)).plan_files()
    (report,) = got
    assert report.snapshot_id == t.current_snapshot().snapshot_id
    assert report.projected_field_names == ("p",) and report.projected_field_ids == (2,)
    assert report.counters["result-data-files"] == 1 and report.planning_duration_ns > 0
    assert str(report.filter) == "p = 2"
    failing = Table(t.identifier, t.metadata, t.metadata_location, t.io, Reporting(True))
    assert failing.scan().to_arrow().num_rows == 20  # the report failed; the scan did not
