"""A local read that would make fewer splits than it has threads splits its files by row
group (Iceberg Java's adaptive split size); an explicit split size, as scan option or table
property, is taken as given. Either way the rows are the same."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.scan import columnar
from icefloe.table import Table


@pytest.fixture
def one_file_four_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Table:
    """One data file of four row groups, with the smallest adapted split (16 MiB) and the
    least a file counts for (4 MiB) lowered so that this small file shows the adaptation."""
    monkeypatch.setattr(columnar, "MIN_SPLIT_SIZE", 1)
    monkeypatch.setattr(columnar, "OPEN_FILE_COST", 1)
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    t.set_properties({"write.parquet.row-group-limit": "2500"})
    ids = pa.array(range(10_000), pa.int64())
    t.append(pa.table({"id": ids, "s": pa.compute.cast(ids, pa.string())}))
    return t


def test_small_reads_are_split_by_row_group(one_file_four_groups: Table) -> None:
    t = one_file_four_groups
    assert len(t.scan().plan_files()) == 1
    two = t.scan(options={"scan.threads": "2"}).plan_tasks()
    four = t.scan(options={"scan.threads": "4"}).plan_tasks()
    assert 2 <= len(two) <= len(four) == 4  # one split per row group at most
    assert {task.data_file.file_path for task in four} == {two[0].data_file.file_path}
    fixed = t.scan(options={"scan.threads": "4", "read.split.target-size": str(1 << 30)})
    assert len(fixed.plan_tasks()) == 1
    for opts in ({"scan.threads": "4"}, {"scan.threads": "1"}):
        got = t.scan(options=opts).to_arrow()
        assert got.column("id").to_pylist() == list(range(10_000))


def test_table_property_split_size_is_kept(one_file_four_groups: Table) -> None:
    t = one_file_four_groups
    t.set_properties({"read.split.target-size": str(1 << 30)})
    assert len(t.scan(options={"scan.threads": "4"}).plan_tasks()) == 1
