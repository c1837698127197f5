"""Table columns named like metadata columns (``_pos``, ``_file``, ``_spec_id``, ``_row_id``):
legal in a user's schema, they shadow the metadata columns of those names in reads and are
written as plain columns; format version 3 reserves the row lineage names."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from support.write_util import catalog, pyiceberg_read

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("_pos", pa.int64()),
        ("_file", pa.string()),
        ("_spec_id", pa.string()),
        ("_row_id", pa.int64()),
    ]
)


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "_pos": [i * 100 for i in ids],
            "_file": [f"f{i}" for i in ids],
            "_spec_id": [f"s{i}" for i in ids],
            "_row_id": [i * 7 for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize("version", [1, 2])
def test_user_columns_shadow_metadata_columns(tmp_path: Path, version: int) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties={"format-version": str(version)})
    t.append(_rows([1, 2, 3]))
    t.upsert(_rows([3, 4]), join_cols=["id"])
    t.delete("id = 1")
    want = _rows([2, 3, 4])
    names = ("id", "_pos", "_file", "_spec_id", "_row_id")
    got = t.scan(selected_fields=names).to_arrow().sort_by("id")
    assert got.to_pylist() == want.to_pylist()
    assert t.scan(selected_fields=("*", "_pos")).to_arrow().column_names == list(names)
    filtered = t.scan(row_filter="_pos = 300", selected_fields=("id", "_pos")).to_arrow()
    assert filtered.to_pylist() == [{"id": 3, "_pos": 300}]
    assert pyiceberg_read(t).sort_by("id").to_pylist() == want.to_pylist()


def test_v3_refuses_row_lineage_names(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match="row lineage"):
        cat.create_table("ns.v3", SCHEMA, properties={"format-version": "3"})
    t = cat.create_table("ns.v2", SCHEMA, properties={"format-version": "2"})
    with pytest.raises(ValidationError, match="row lineage"):
        t.upgrade_format_version(3)
    assert t.refresh().format_version == 2
    with t.update_schema() as u:
        u.rename_column("_row_id", "row_id")
    t.upgrade_format_version(3)
    assert t.format_version == 3
