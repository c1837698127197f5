"""``not`` around an ordering comparison is its exact complement everywhere: a scan returns
and a delete removes the same rows (nulls and NaN included, as the guide says), whatever the
file layout or partitioning the planner prunes with."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.write_util import catalog

ROWS = [(1, None, None), (2, 1, 1.0), (3, 5, 5.0), (4, 3, float("nan")), (5, 4, -0.0)]
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("a", pa.int32()), ("x", pa.float64())]
)


def _table(rows: list[tuple[Any, ...]]) -> pa.Table:
    cols = list(zip(*rows, strict=True)) if rows else [[], [], []]
    return pa.table([pa.array(c, t.type) for c, t in zip(cols, SCHEMA, strict=True)], SCHEMA)


def _complement(column: int, test: Any) -> list[int]:
    """Ids of the rows a two-valued ``not test`` selects: test is false on null and NaN."""

    def holds(v: Any) -> bool:
        return v is not None and not (isinstance(v, float) and math.isnan(v)) and test(v)

    return [r[0] for r in ROWS if not holds(r[column])]


CASES = [
    ("not (a > 3)", _complement(1, lambda v: v > 3)),
    ("not (a <= 3)", _complement(1, lambda v: v <= 3)),
    ("not (x >= 1.0)", _complement(2, lambda v: v >= 1.0)),
    # x < 2.0 holds for ids 2 and 5 (NaN and null fail it), a > 0 for 2, 3, 4 and 5
    ("not (x < 2.0 and a > 0)", [1, 3, 4]),
]


@pytest.mark.parametrize("layout", ["one file", "a file per row", "identity", "bucket", "truncate"])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize(("text", "selected"), CASES)
def test_scan_and_delete_agree_under_not(
    tmp_path: Path, layout: str, mode: str, text: str, selected: list[int]
) -> None:
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, properties={"format-version": "2", "write.delete.mode": mode}
    )
    if layout in ("identity", "bucket", "truncate"):
        transform = {"identity": "identity", "bucket": "bucket[4]", "truncate": "truncate[2]"}
        with t.update_spec() as u:
            u.add_field("a", transform[layout])
    data = _table(ROWS)
    if layout == "one file":
        t.append(data)
    else:
        with t.transaction() as tx:
            for i in range(data.num_rows):
                tx.append(data.slice(i, 1))
    got = sorted(t.scan(row_filter=text).to_arrow()["id"].to_pylist())
    assert got == sorted(selected)
    t.delete(text)
    left = sorted(t.scan().to_arrow()["id"].to_pylist())
    assert left == sorted(set(r[0] for r in ROWS) - set(selected))
