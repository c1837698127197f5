"""``icefloe scan`` and ``icefloe sql`` output: ``--output`` files written whole or not at all,
variant columns (nested ones too) as JSON text, as Parquet VARIANT and as DuckDB VARIANT, and
time-travel errors in the command's own option names."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.cli.output_file import replaced_file
from icefloe.cli.query_cmds import write_batches
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
    t = cat.create_table("db.broken", pa.schema([pa.field("id", pa.int64())]), format_version=2)
    for i in range(3):
        t.append(pa.table({"id": pa.array(range(i * 1000, i * 1000 + 1000), pa.int64())}))
    last = [task.data_file.file_path for task in t.scan().plan_files()][-1]
    os.remove(last.removeprefix("file://"))  # the last file the scan reads
    cat.close()
    return w


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


def test_output_into_a_missing_directory_is_bad_input(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "nowhere" / "rows.json"
    r = run(world, "scan", "db.whole", "--json", "-o", str(out))
    assert r.exit_code == 2 and "cannot write --output" in r.stderr, r.stderr
