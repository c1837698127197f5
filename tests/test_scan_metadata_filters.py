"""Row filters name table columns only: a filter on a metadata column that a scan can select
(``_row_id``, ``_file``, ...) is refused with a message that says so."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from support.write_util import catalog


def test_filter_on_a_metadata_column_says_it_is_one(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table(
        "ns.t", pa.schema([("id", pa.int64())]), properties={"format-version": "3"}
    )
    t.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    picked = ("id", "_row_id")
    with pytest.raises(ValidationError, match="cannot filter on the metadata column '_row_id'"):
        t.scan(row_filter="_row_id < 5", selected_fields=picked).to_arrow()
    with pytest.raises(ValidationError, match="metadata column '_FILE'"):
        t.scan(row_filter="id > 1 and not (_FILE = 'x')", case_sensitive=False).to_arrow()
    with pytest.raises(ValidationError, match="cannot find column 'nope'"):  # not one
        t.scan(row_filter="nope < 5").to_arrow()
    assert t.scan(selected_fields=picked).to_arrow().column("_row_id").to_pylist() == list(
        range(10)
    )


def test_a_table_column_named_like_a_metadata_column_is_filtered(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", pa.schema([("_pos", pa.int64())]))
    t.append(pa.table({"_pos": pa.array([7, 8], pa.int64())}))
    assert t.scan(row_filter="_pos = 8").to_arrow().column("_pos").to_pylist() == [8]


def test_a_deep_filter_with_a_bad_name_is_still_a_validation_error(tmp_path: Path) -> None:
    """Filters built in code may nest deeper than Python's recursion limit: looking for a
    metadata column among their names must not overflow the stack."""
    import functools

    from icefloe.expressions import Or
    from icefloe.expressions.base import UnboundPredicate

    t = catalog(tmp_path).create_table("ns.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    names = ["id"] * 2999 + ["idd"]
    deep = functools.reduce(Or, [UnboundPredicate("eq", n, i) for i, n in enumerate(names)])
    with pytest.raises(ValidationError):
        t.scan(row_filter=deep).to_arrow()
