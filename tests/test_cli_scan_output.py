"""``icefloe scan`` and ``icefloe sql`` output: ``--output`` files written whole or not at all,
variant columns (nested ones too) as JSON text, as Parquet VARIANT and as DuckDB VARIANT, and
time-travel errors in the command's own option names."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe import variant
from icefloe.cli.output_file import replaced_file
from icefloe.cli.query_cmds import write_batches
from icefloe.cli.render import iso
from icefloe.schema import Schema
from icefloe.types import (
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    VariantType,
)
from support.cli import run
from support.cli_tables import CliWorld, empty_world

FORMATS = ("parquet", "csv", "json")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> CliWorld:
    w = empty_world(tmp_path_factory.mktemp("cli-scan-output") / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    t = cat.create_table("db.whole", pa.schema([pa.field("id", pa.int64())]), format_version=2)
    for i in range(3):
        t.append(pa.table({"id": pa.array(range(i * 1000, i * 1000 + 1000), pa.int64())}))
    first = t.history()[0].snapshot_id
    with t.manage_snapshots() as ms:
        ms.create_tag("t1", first)
        ms.create_branch("audit")
    t = cat.create_table("db.broken", pa.schema([pa.field("id", pa.int64())]), format_version=2)
    for i in range(3):
        t.append(pa.table({"id": pa.array(range(i * 1000, i * 1000 + 1000), pa.int64())}))
    last = [task.data_file.file_path for task in t.scan().plan_files()][-1]
    os.remove(last.removeprefix("file://"))  # the last file the scan reads
    _variant_table(cat)
    cat.close()
    return w


def _variant_table(cat: Any) -> None:
    """``db.var``: a variant column and variants inside a struct, a list and a map."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "v", VariantType()),
        NestedField(3, "s", StructType(NestedField(4, "inner", VariantType()))),
        NestedField(5, "l", ListType(6, VariantType(), element_required=False)),
        NestedField(7, "m", MapType(8, StringType(), 9, VariantType(), value_required=False)),
    )
    t = cat.create_table("db.var", schema, format_version=3)
    keys = pa.array(["k", "k"])
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "v": variant.from_pylist([{"a": 1, "b": [1, 2]}, None]),
                "s": pa.StructArray.from_arrays([variant.from_pylist([{"b": 2}, "x"])], ["inner"]),
                "l": pa.ListArray.from_arrays(
                    pa.array([0, 1, 2], pa.int32()), variant.from_pylist([{"c": 3}, 4])
                ),
                "m": pa.MapArray.from_arrays(
                    pa.array([0, 1, 2], pa.int32()), keys, variant.from_pylist([[5], True])
                ),
            }
        )
    )


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def _count(path: Path, fmt: str) -> int:
    if fmt == "parquet":
        return pq.read_table(path).num_rows
    lines = path.read_text().splitlines()
    return len(lines) - (fmt == "csv")


@pytest.mark.parametrize("fmt", FORMATS)
def test_failed_scan_leaves_no_output_file(world: CliWorld, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"rows.{fmt}"
    r = run(world, "scan", "db.broken", "--format", fmt, "-o", str(out))
    assert r.exit_code != 0 and "cannot open" in r.stderr, r.stderr
    assert not out.exists()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_failed_scan_keeps_an_existing_output_file(
    world: CliWorld, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / f"rows.{fmt}"
    out.write_text("what was there\n")
    r = run(world, "scan", "db.broken", "--format", fmt, "-o", str(out))
    assert r.exit_code != 0
    assert out.read_text() == "what was there\n"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_scan_and_sql_replace_an_output_file_with_every_row(
    world: CliWorld, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / f"rows.{fmt}"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    assert run(world, "scan", "db.whole", "--format", fmt, "-o", str(out)).exit_code == 0
    assert _count(out, fmt) == 3000
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file's mode is kept
    r = run(world, "sql", "select * from db.whole where id < 10", "--format", fmt, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert _count(out, fmt) == 10
    assert _leftovers(tmp_path) == []


def test_failed_sql_keeps_an_existing_output_file(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    out.write_text("what was there\n")
    r = run(world, "sql", "select * from db.broken", "--format", "json", "-o", str(out))
    assert r.exit_code != 0
    assert out.read_text() == "what was there\n"
    assert _leftovers(tmp_path) == []


def _interrupted(schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    yield pa.record_batch([pa.array(range(100), pa.int64())], schema=schema)
    raise KeyboardInterrupt


@pytest.mark.parametrize("fmt", FORMATS)
def test_interrupted_write_leaves_the_output_file_as_it_was(tmp_path: Path, fmt: str) -> None:
    schema = pa.schema([pa.field("id", pa.int64())])
    out = tmp_path / f"rows.{fmt}"
    out.write_text("what was there\n")
    with pytest.raises(KeyboardInterrupt):
        write_batches(None, schema, _interrupted(schema), fmt, str(out), 10)  # type: ignore[arg-type]
    assert out.read_text() == "what was there\n"
    assert _leftovers(tmp_path) == []


def test_replaced_file_through_a_symlink_and_into_a_device(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with replaced_file(str(link), "w") as f:
        f.write("new")
    assert link.is_symlink() and real.read_text() == "new"
    with replaced_file(os.devnull, "wb") as f:  # not a regular file: written to directly
        f.write(b"gone")
    assert Path(os.devnull).exists() and not Path(os.devnull).is_file()
    assert _leftovers(tmp_path) == [] and _leftovers(Path(os.devnull).parent) == []


def test_replaced_file_keeps_hard_links_and_refuses_what_it_cannot_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.exceptions import ValidationError

    real = tmp_path / "real.txt"
    real.write_text("old")
    other = tmp_path / "other.txt"
    os.link(real, other)
    with replaced_file(str(real), "w") as f:  # written in place: both names see it
        f.write("new")
    assert other.read_text() == "new" and os.stat(real).st_ino == os.stat(other).st_ino
    plain = tmp_path / "plain.txt"
    plain.write_text("kept")
    monkeypatch.setattr(os, "replace", _refused)
    with (
        pytest.raises(ValidationError, match="cannot write --output"),
        replaced_file(str(plain), "w") as f,
    ):
        f.write("new")
    assert plain.read_text() == "kept" and _leftovers(tmp_path) == []
    monkeypatch.undo()
    if os.geteuid() != 0:  # root may write a read-only file
        plain.chmod(0o444)
        with (
            pytest.raises(ValidationError, match="cannot write --output"),
            replaced_file(str(plain), "w") as f,
        ):
            f.write("new")
        assert plain.read_text() == "kept"


def _refused(src: str, dst: str) -> None:
    raise PermissionError(13, "Permission denied")


def test_output_into_a_missing_directory_is_bad_input(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "nowhere" / "rows.json"
    r = run(world, "scan", "db.whole", "--json", "-o", str(out))
    assert r.exit_code == 2 and "cannot write --output" in r.stderr, r.stderr


#: ``db.var``'s rows as ``scan --json`` writes them: every variant as its JSON text.
VARIANT_ROWS = [
    {
        "id": 1,
        "v": '{"a":1,"b":[1,2]}',
        "s": {"inner": '{"b":2}'},
        "l": ['{"c":3}'],
        "m": [["k", "[5]"]],
    },
    {"id": 2, "v": None, "s": {"inner": '"x"'}, "l": ["4"], "m": [["k", "true"]]},
]


def test_scan_shows_nested_variants_as_json_text(world: CliWorld) -> None:
    r = run(world, "scan", "db.var", "--json")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == VARIANT_ROWS
    table = run(world, "scan", "db.var").stdout
    assert "metadata" not in table and '\\"b\\":2' in table, table


def test_scan_parquet_keeps_the_variant_annotation(world: CliWorld, tmp_path: Path) -> None:
    """The table's own files carry the Parquet VARIANT annotation; so does ``scan --format
    parquet``, so DuckDB reads its variants (nested ones too) as VARIANT."""
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "var.parquet"
    r = run(world, "scan", "db.var", "--format", "parquet", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert pq.read_table(out).num_rows == 2
    with duckdb.connect() as con:
        types = con.execute(
            "SELECT typeof(v), typeof(s), typeof(l), typeof(m) FROM read_parquet(?)", [str(out)]
        ).fetchone()
        assert types == (
            "VARIANT",
            'STRUCT("inner" VARIANT)',
            "VARIANT[]",
            "MAP(VARCHAR, VARIANT)",
        )
        got = con.execute(
            "SELECT v.a::INT, s.inner.b::INT, l[1].c::INT FROM read_parquet(?) ORDER BY id",
            [str(out)],
        ).fetchall()
    assert got == [(1, 2, 3), (None, None, None)]


def test_sql_reads_variants_as_duckdb_variants(world: CliWorld) -> None:
    pytest.importorskip("duckdb")
    r = run(world, "sql", "select * from db.var order by id", "--json")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == VARIANT_ROWS
    r = run(
        world,
        "sql",
        "select typeof(v) as t, v.a::INT as a, variant_extract(v, 'b')[2]::INT as b2, "
        "s.inner.b::INT as sb, v::JSON->>'a' as ja from db.var where id = 1",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"t": "VARIANT", "a": 1, "b2": 2, "sb": 2, "ja": "1"}
    shown = run(world, "sql", "select v, s from db.var where id = 1").stdout
    assert '{"a":1,"b":[1,2]}' in shown and "metadata" not in shown, shown
    # a VARIANT a query makes leaves DuckDB as JSON text too
    r = run(world, "sql", "select 1::VARIANT as x, [{'k': 'y'::VARIANT}] as y", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"x": "1", "y": [{"k": '"y"'}]}


def test_since_and_until_errors_name_the_options(world: CliWorld) -> None:
    r = run(world, "scan", "db.whole", "--since", "t1", "--until", "audit")
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith("error: --until: 'audit' is a branch;"), r.stderr
    assert "to_snapshot_id" not in r.stderr
    r = run(world, "scan", "db.whole", "--changes", "--since", "audit")
    assert r.exit_code == 2 and r.stderr.startswith("error: --since: 'audit' is a branch;")
    r = run(world, "scan", "db.whole", "--since", "nosuch")
    assert r.exit_code == 3, r.stderr
    assert r.stderr.startswith("error: --since: no tag named 'nosuch'"), r.stderr
    r = run(world, "scan", "db.whole", "--since", "t1", "--until", "999")
    assert r.exit_code == 3, r.stderr
    assert r.stderr.startswith("error: --until: the table has no snapshot 999"), r.stderr
    r = run(world, "scan", "db.whole", "--since", "t1", "--json")  # a tag still reads
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 2000, r.stderr


def test_as_of_errors_give_iso_times(world: CliWorld) -> None:
    t = world.catalog().load_table("db.whole")
    start = iso(min(e.timestamp_ms for e in t.metadata.snapshot_log))
    r = run(world, "scan", "db.whole", "--as-of", "2001-01-01T00:00:00+00:00")
    assert r.exit_code == 3, r.stderr
    assert r.stderr.strip() == (
        "error: --as-of: no snapshot was current at 2001-01-01T00:00:00.000+00:00: the "
        f"snapshot log starts at {start}"
    )
    r = run(world, "scan", "db.whole", "--as-of", "1000")  # epoch milliseconds
    assert r.exit_code == 3 and "current at 1970-01-01T00:00:01.000+00:00:" in r.stderr
    r = run(world, "scan", "db.whole", "--as-of", "next tuesday")
    assert r.exit_code == 2 and r.stderr.startswith("error: --as-of: not an age or a time")
    now = run(world, "scan", "db.whole", "--as-of", "0s", "--json")
    assert now.exit_code == 0 and len(now.stdout.splitlines()) == 3000, now.stderr
