"""Expressions: parsing, binding and vectorised row filtering, against PyIceberg 0.12."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from harness import Harness
from icefloe.expressions import bind, parse, rewrite_not
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.types import DoubleType, LongType, NestedField, StringType, StructType

FILTER = (
    "id > 5 and (x < 0.5 or x is nan) and s like 'ab%' and id not in (7, 8, 9) "
    "and not (s = 'abc' or id >= 900000)"
)


def run(h: Harness) -> None:
    from pyiceberg.expressions import parser as py_parser
    from pyiceberg.expressions.visitors import bind as py_bind
    from pyiceberg.io.pyarrow import expression_to_pyarrow
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.types import DoubleType as PyDouble
    from pyiceberg.types import LongType as PyLong
    from pyiceberg.types import NestedField as PyField
    from pyiceberg.types import StringType as PyString

    schema = StructType(
        NestedField(1, "id", LongType()),
        NestedField(2, "x", DoubleType()),
        NestedField(3, "s", StringType()),
    )
    py_schema = PySchema(
        PyField(1, "id", PyLong(), required=False),
        PyField(2, "x", PyDouble(), required=False),
        PyField(3, "s", PyString(), required=False),
    )
    n_parse = h.size(300, 50)
    h.compare(
        "parse + bind filter string",
        n_parse,
        "filters",
        ours=lambda: [bind(schema, parse(FILTER)) for _ in range(n_parse)],
        peers={
            "pyiceberg": lambda: [
                py_bind(py_schema, py_parser.parse(FILTER.replace(" nan", " NaN")), True)
                for _ in range(n_parse)
            ]
        },
        target="parity or better with PyIceberg",
    )

    rows = h.size(1_000_000, 100_000)
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 1_000_000, rows)
    xs = rng.random(rows)
    xs[::97] = np.nan
    words = np.array(["abc", "abd", "xyz", "ab", "b"])[rng.integers(0, 5, rows)]
    table = pa.table({"id": ids, "x": xs, "s": words})
    ours_expr = to_arrow_expression(rewrite_not(bind(schema, parse(FILTER))))
    py_expr = expression_to_pyarrow(
        py_bind(py_schema, py_parser.parse(FILTER.replace(" nan", " NaN")), True)
    )
    assert table.filter(ours_expr).num_rows == table.filter(py_expr).num_rows
    h.compare(
        "filter Arrow table with residual",
        rows,
        "rows",
        ours=lambda: table.filter(ours_expr),
        peers={"pyiceberg": lambda: table.filter(py_expr)},
        target="parity with PyIceberg (both are Arrow compute)",
    )
