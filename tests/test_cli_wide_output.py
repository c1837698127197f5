"""``icefloe scan`` and ``icefloe sql`` in the table format on results wider than the
terminal (as many columns as fit, values on one line, a note naming the columns left out),
and scan's JSON and CSV keeping column names that differ only by case."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from rich.cells import cell_len

from icefloe.cli.render import fit_widths
from support.cli import Result, run
from support.cli_tables import CliWorld, empty_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> CliWorld:
    w = empty_world(tmp_path_factory.mktemp("cli-wide-output") / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    for name, n in (("db.w40", 40), ("db.w2000", 2000)):
        data = pa.table({f"col{i}": pa.array([i, i + 1], pa.int64()) for i in range(n)})
        cat.create_table(name, data.schema).append(data)
    long = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "text": ["x" * 200, "short"],
            "名前": ["日本語" * 30, "b"],
            "ts": ["2026-01-09T09:00:00+00:00"] * 2,
        }
    )
    cat.create_table("db.long", long.schema).append(long)
    cased = pa.schema([("Case", pa.int64()), ("case", pa.string())])
    cat.create_table("db.cased", cased).append(
        pa.table({"Case": pa.array([1], pa.int64()), "case": ["x"]})
    )
    cat.close()
    return w


def _grid(r: Result, width: int) -> tuple[list[str], list[list[str]]]:
    """The header and rows of a drawn table, each line at most ``width`` cells."""
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    assert all(cell_len(line) <= width for line in lines), r.stdout
    assert set(lines[1]) == {"─"}, r.stdout  # one header line, then the rule
    return lines[0].split(), [line.split() for line in lines[2:]]


@pytest.mark.parametrize("width", [40, 80, 120])
def test_a_wide_scan_shows_the_leading_columns_whole_and_says_what_it_left_out(
    world: CliWorld, width: int
) -> None:
    """40 columns at 80 cells drew only ``col39``, one character per line, the other
    columns blank, and said nothing."""
    r = run(world, "scan", "db.w40", width=width)
    assert r.exit_code == 0, r.stderr
    header, rows = _grid(r, width)
    shown = len(header)
    assert 1 < shown < 40
    assert header == [f"col{i}" for i in range(shown)]
    assert rows == [[str(i + k) for i in range(shown)] for k in (0, 1)]
    note = " ".join(r.stderr.split())
    assert f"{40 - shown} of 40 columns not shown, from col{shown} on" in note, note
    for hint in ("--select", "--width", "--format csv or json"):
        assert hint in note, note


def test_two_thousand_columns_draw_a_readable_table(world: CliWorld) -> None:
    """A 2,000-column table printed a rule line and blank lines only."""
    r = run(world, "scan", "db.w2000", "--limit", "2", width=80)
    assert r.exit_code == 0, r.stderr
    header, rows = _grid(r, 80)
    assert header[:3] == ["col0", "col1", "col2"]
    assert rows[0][:3] == ["0", "1", "2"] and len(rows[0]) == len(header)
    assert f"{2000 - len(header):,} of 2,000 columns not shown" in " ".join(r.stderr.split())


def test_select_brings_back_the_columns_left_out(world: CliWorld) -> None:
    r = run(world, "scan", "db.w40", "--select", "col39,col38", width=80)
    assert r.exit_code == 0, r.stderr
    header, rows = _grid(r, 80)
    assert header == ["col39", "col38"] and rows == [["39", "38"], ["40", "39"]]
    assert "not shown" not in r.stderr


def test_long_values_are_cut_with_an_ellipsis_not_folded(world: CliWorld) -> None:
    r = run(world, "scan", "db.long", width=80)
    assert r.exit_code == 0, r.stderr
    header, rows = _grid(r, 80)
    assert header == ["id", "text", "名前", "ts"]
    assert len(rows) == 2  # one line per row: nothing folded onto a second line
    assert rows[0][0] == "1" and rows[0][1].startswith("xxx") and rows[0][1].endswith("…")
    # a wide character that does not fit leaves a blank before the ellipsis
    assert rows[0][2].startswith("日本語") and rows[0][-2].endswith("…")
    assert rows[0][-1] == "2026-01-09T09:00:00+00:00"  # a short value stays whole
    assert rows[1] == ["2", "short", "b", "2026-01-09T09:00:00+00:00"]
    assert "not shown" not in r.stderr


def test_a_table_drawn_into_a_file_fits_its_width(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "wide.txt"
    r = run(world, "scan", "db.w40", "-o", str(out), width=60)
    assert r.exit_code == 0, r.stderr
    header, rows = _grid(Result(0, out.read_text(), ""), 60)
    assert header[0] == "col0" and len(rows) == 2 and len(rows[0]) == len(header) < 40
    assert f"{40 - len(header)} of 40 columns not shown" in " ".join(r.stderr.split())


def test_a_wide_sql_result_says_what_it_left_out(world: CliWorld) -> None:
    query = "select " + ", ".join(f"{i} as c{i}" for i in range(30))
    r = run(world, "sql", query, width=80)
    assert r.exit_code == 0, r.stderr
    header, rows = _grid(r, 80)
    assert header == [f"c{i}" for i in range(len(header))] and len(header) < 30
    assert rows == [[str(i) for i in range(len(header))]]
    note = " ".join(r.stderr.split())
    assert f"{30 - len(header)} of 30 columns not shown" in note
    assert "name fewer columns in the query" in note


def test_scan_json_and_csv_keep_names_that_differ_by_case(world: CliWorld) -> None:
    """Iceberg names are case-sensitive, and so are JSON keys: ``case`` was written
    ``case_1`` beside ``Case``."""
    r = run(world, "scan", "db.cased", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"Case": 1, "case": "x"}
    r = run(world, "scan", "db.cased", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[0] == '"Case","case"'


def test_sql_json_still_tells_names_apart_as_duckdb_does(world: CliWorld) -> None:
    """DuckDB's names are case-insensitive: its clients make ``case`` beside ``Case``
    ``case_1``, and so does ``sql``'s JSON."""
    query = 'select 1 as "Case", \'x\' as "case"'
    r = run(world, "sql", query, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"Case": 1, "case_1": "x"}


def test_fit_widths() -> None:
    assert fit_widths([], 80, 3) == []
    assert fit_widths([4, 5, 6], 80, 3) == [4, 5, 6]  # all whole
    # the columns that fit at 10 cells, the short one whole, the long ones sharing the rest
    assert fit_widths([200, 25, 200, 2], 60, 3) == [12, 25, 12, 2]
    assert fit_widths([30, 30, 30], 40, 3) == [11, 11, 12]
    assert fit_widths([30, 30, 30], 30, 3) == [13, 14]
    assert fit_widths([500], 40, 3) == [40]  # one column: cut to the width
