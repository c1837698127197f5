"""Regressions of the ``icefloe`` command: SQL names that need quoting, a mistyped
``default-catalog``, bounded GCS retries, a configuration that is not UTF-8, the ``files``
listing at 80 columns, the report's wording, exit codes per the guide's table, the Delta
commands' usage and catalog, and renaming a table to itself."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.analysis import PartitionRow, PartitionStats
from icefloe.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OTHER
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType, TimestamptzType
from support.cli import run, run_process
from support.cli_tables import CATALOG, CliWorld, build_world, empty_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-checks") / "world")


@pytest.fixture
def scratch(tmp_path: Path) -> CliWorld:
    """A world of its own for tests that change things."""
    return build_world(tmp_path / "world")


def _one_line_error(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr and "--debug" not in stderr, stderr
    return lines[0]


# -- 1. sql: names that need quoting ------------------------------------------------------------

_ODD_NAMES = [
    (("my ns",), "t", 'select count(*) as n from "my ns".t'),
    (("db",), "select", 'select count(*) as n from db."select"'),
    (("db",), "a-b", 'select count(*) as n from db."a-b"'),
    (("db",), "ünï", "select count(*) as n from db.ünï"),
    (("db",), 'we"ird', 'select count(*) as n from db."we""ird" as w'),
    (("db",), "x.y", 'select count(*) as n from db."x.y"'),
    (("a b", "c"), "t", 'select count(*) as n from "a b".c."t"'),
]


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> CliWorld:
    w = empty_world(tmp_path_factory.mktemp("cli-odd") / "world")
    cat = w.catalog()
    schema = Schema(NestedField(1, "id", LongType()))
    for i, (ns, name, _) in enumerate(_ODD_NAMES):
        for depth in range(1, len(ns) + 1):
            if not cat.namespace_exists(ns[:depth]):
                cat.create_namespace(ns[:depth])
        rows = pa.table({"id": pa.array(range(i + 1), pa.int64())})
        cat.create_table((*ns, name), schema).append(rows)
    cat.close()
    return w


@pytest.mark.parametrize(("i", "query"), [(i, q) for i, (_, _, q) in enumerate(_ODD_NAMES)])
def test_sql_reads_tables_whose_names_need_quoting(odd: CliWorld, i: int, query: str) -> None:
    pytest.importorskip("duckdb")
    r = run(odd, "sql", query, "--json")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"n": i + 1}]


def test_sql_joins_two_quoted_names(odd: CliWorld) -> None:
    pytest.importorskip("duckdb")
    query = 'select count(*) as n from "my ns".t as a join db."a-b" as b on a.id = b.id'
    r = run(odd, "sql", query, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"n": 1}


def test_referenced_names_are_split_as_duckdb_quotes_them() -> None:
    from icefloe.cli.sql_names import name_parts as _name_parts

    assert _name_parts('"my ns".t') == ("my ns", "t")
    assert _name_parts('db."we""ird" AS w') == ("db", 'we"ird')
    assert _name_parts('db."x.y"') == ("db", "x.y")
    assert _name_parts('db."A B" AS q') == ("db", "A B")
    assert _name_parts("a.b.c AS t") == ("a", "b", "c")
    assert _name_parts('"db.x"') == ("db.x",)


def test_select_lists_take_quoted_names(tmp_path: Path) -> None:
    """``--select`` quotes as table names do: a column named ``a,b`` can be selected, and a
    quoted ``"a.b"`` is the name (it was looked up with its quotes); a table named with
    quotes is reported with them when missing."""
    from icefloe.cli.names import select_list

    assert select_list('id, "a.b" ,x') == ("id", "a.b", "x")
    assert select_list('"a,b",c,,') == ("a,b", "c")
    assert select_list('"q""x"') == ('q"x',)
    with pytest.raises(ValidationError, match="not a column list"):
        select_list('"a"b')
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("a.b", pa.int64()), ("a,b", pa.int64())])
    cat.create_table("db.t", schema).append(
        pa.table({"id": [1, 2], "a.b": [10, 20], "a,b": [5, 6]}, schema=schema)
    )
    cat.close()
    r = run(w, "scan", "db.t", "--select", 'id,"a.b","a,b"', "--filter", '"a.b" = 10', "--json")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"id": 1, "a.b": 10, "a,b": 5}]
    r = run(w, "scan", 'db."t.x"')
    assert r.exit_code == EXIT_NOT_FOUND
    assert _one_line_error(r.stderr) == """error: table 'db."t.x"' does not exist"""


def test_select_lists_quote_the_parts_of_nested_paths(tmp_path: Path) -> None:
    """A struct field named ``a.b`` is ``nested."a.b"``, as in ``--filter``, for ``--select``
    and ``compute-stats --columns`` too (they took only the unquoted ``nested.a.b``)."""
    from icefloe.cli.names import select_list

    assert select_list('nested."a.b", id') == ("nested.a.b", "id")
    assert select_list('"x".y') == ("x.y",)
    # a name without quotes is taken as written
    assert select_list("price..usd, v. 2, ver.") == ("price..usd", "v. 2", "ver.")
    for bad in ('"a"b', 'x."a".', '"a"..b'):
        with pytest.raises(ValidationError, match="not a column list"):
            select_list(bad)
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("nested", pa.struct([("a.b", pa.int32())]))])
    rows = pa.table({"id": [1, 2], "nested": [{"a.b": 1}, {"a.b": 2}]}, schema=schema)
    cat.create_table("db.q", schema).append(rows)
    cat.close()
    path = 'nested."a.b"'
    r = run(w, "scan", "db.q", "--select", f"id,{path}", "--filter", f"{path} = 2", "--json")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"id": 2, "nested": {"a.b": 2}}]
    r = run(w, "compute-stats", "db.q", "--columns", path)
    assert r.exit_code == 0, r.stderr


# -- 2. a default-catalog that names no catalog -------------------------------------------------


def test_a_mistyped_default_catalog_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "icefloe.yaml"
    cfg.write_text(
        f"default-catalog: prodd\ncatalog:\n  prod:\n    uri: sqlite:///{tmp_path / 'p.db'}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICEFLOE_CONFIG", str(cfg))
    with pytest.raises(ValidationError, match=r"default-catalog 'prodd'.*icefloe\.yaml"):
        load_catalog()
    w = CliWorld(tmp_path, {"ICEFLOE_CONFIG": str(cfg)})
    for args in (("list",), ("create", "namespace", "sales")):
        r = run(w, *args)
        assert r.exit_code == EXIT_BAD_INPUT, (args, r.stdout, r.stderr)
        assert "'prodd'" in _one_line_error(r.stderr)
    assert not (tmp_path / "warehouse").exists()  # no local catalog made on the side
    load_catalog("prod").close()


def test_without_a_default_catalog_the_local_one_still_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "icefloe.yaml"
    for text in (
        f"catalog:\n  prod:\n    uri: sqlite:///{tmp_path / 'p.db'}\n",
        "default-catalog: default\n",
    ):
        cfg.write_text(text)
        monkeypatch.setenv("ICEFLOE_CONFIG", str(cfg))
        cat = load_catalog()
        assert cat.name == "default" and isinstance(cat, SqlCatalog)
        cat.close()
    assert (tmp_path / "warehouse" / "icefloe_catalog.db").is_file()


# -- 3. gs:// without an answer ------------------------------------------------------------------


def test_gcs_file_system_has_a_bounded_retry_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import icefloe.filesystems as ifs
    import icefloe.io.fileio as iio

    made: list[dict[str, object]] = []

    class Recorder:
        def __init__(self, **kwargs: object) -> None:
            made.append(kwargs)

    monkeypatch.setattr(iio.pafs, "GcsFileSystem", Recorder)
    iio.FileIO({}).resolve("gs://bucket/x.metadata.json")
    iio.FileIO({"gcs.retry-time-limit-seconds": "5"}).resolve("gs://bucket/x")
    assert made[0]["retry_time_limit"] == dt.timedelta(seconds=ifs.GCS_RETRY_TIME_LIMIT_SECONDS)
    assert ifs.GCS_RETRY_TIME_LIMIT_SECONDS <= 60
    assert made[1]["retry_time_limit"] == dt.timedelta(seconds=5)
    for bad in ("soon", "0", "-1"):
        with pytest.raises(ValidationError, match=r"gcs\.retry-time-limit-seconds"):
            iio.FileIO({"gcs.retry-time-limit-seconds": bad}).resolve("gs://bucket/x")


def test_gcs_location_without_a_server_fails_within_the_limit(tmp_path: Path) -> None:
    """A closed local port as the GCS endpoint: every attempt is refused at once, so the time
    taken is the retry limit (1 s here), not google-cloud-cpp's 15 minutes."""
    prefix = "ICEFLOE_CATALOG__G__"
    w = CliWorld(
        tmp_path,
        {
            "ICEFLOE_CONFIG": str(tmp_path / "none.yaml"),
            f"{prefix}TYPE": "sql",
            f"{prefix}URI": f"sqlite:///{tmp_path / 'g.db'}",
            f"{prefix}WAREHOUSE": (tmp_path / "wh").as_uri(),
            f"{prefix}GCS__SERVICE__HOST": "http://127.0.0.1:1",
            f"{prefix}GCS__ANONYMOUS": "true",
            f"{prefix}GCS__RETRY_TIME_LIMIT_SECONDS": "1",
        },
    )
    (tmp_path / "none.yaml").write_text("")
    start = time.monotonic()
    r = run_process(w, "--catalog", "g", "describe", "gs://nobucket/x.metadata.json", timeout=60)
    assert time.monotonic() - start < 30
    assert r.exit_code == EXIT_OTHER, r.stderr
    assert "gs://nobucket/x.metadata.json" in _one_line_error(r.stderr)


# -- 4. a configuration that is not UTF-8 --------------------------------------------------------


def test_a_config_file_that_is_not_utf8_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "latin1.yaml"
    cfg.write_bytes(b"catalog:\n  a:\n    type: sql\n    warehouse: /tmp/caf\xe9\n")
    monkeypatch.setenv("ICEFLOE_CONFIG", str(cfg))
    with pytest.raises(ValidationError, match=r"latin1\.yaml.*UTF-8"):
        load_catalog("a")
    r = run(CliWorld(tmp_path, {"ICEFLOE_CONFIG": str(cfg)}), "--catalog", "a", "list")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "latin1.yaml" in _one_line_error(r.stderr)


# -- 5. files at 80 columns ----------------------------------------------------------------------


def test_files_keeps_its_numbers_with_long_partition_labels(tmp_path: Path) -> None:
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "customer_region", StringType()),
        NestedField(2, "event_time", TimestamptzType()),
        NestedField(3, "id", LongType()),
    )
    spec = PartitionSpec(
        PartitionField(1, 1000, parse_transform("identity"), "customer_region"),
        PartitionField(2, 1001, parse_transform("hour"), "event_time_hour"),
    )
    t = cat.create_table("db.t", schema, partition_spec=spec)
    when = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    t.append(
        pa.table(
            {
                "customer_region": ["europe-west-1", "north-america-east"],
                "event_time": pa.array([when, when], pa.timestamp("us", "UTC")),
                "id": pa.array([1, 2], pa.int64()),
            }
        )
    )
    cat.close()
    for width in (80, 60, 40):
        r = run(w, "files", "db.t", width=width)
        assert r.exit_code == 0, r.stderr
        lines = r.stdout.splitlines()
        header = next(line for line in lines if line.lstrip().startswith("content"))
        assert header.split() == ["content", "file", "partition", "rows", "size"], (width, header)
        rows = [line for line in lines if line.startswith("data ")]
        assert len(rows) == 2, r.stdout
        for line in rows:
            assert len(line) <= width, (width, line)
            *_, rows_cell, size, unit = line.split()
            assert rows_cell == "1" and size[0].isdigit() and unit in ("B", "KiB"), line
        assert all(len(line) <= width for line in lines if "─" in line)


def test_files_keeps_content_and_sizes_whole_on_a_narrow_terminal(tmp_path: Path) -> None:
    """At 40 columns with a position-delete file the file and partition columns took more
    than the room left, so the size (``1.4 K…``) and content (``pos-delet…``) were cut."""
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        pa.schema([("k", pa.int64()), ("v", pa.string())]),
        properties={"write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"k": pa.array(range(100), pa.int64()), "v": [f"s{i}" for i in range(100)]}))
    t.delete("k = 5")
    cat.close()
    for width in (40, 50):
        r = run(w, "files", "db.t", width=width)
        assert r.exit_code == 0, r.stderr
        rows = [line for line in r.stdout.splitlines() if line.startswith(("data ", "pos-"))]
        assert [line.split()[0] for line in rows] == ["data", "pos-deletes"], r.stdout
        for line in rows:
            assert len(line) <= width and "…" not in line.split()[-1], (width, line)
            assert line.split()[-1] in ("B", "KiB"), (width, line)


# -- 6. the report's row count and skew ---------------------------------------------------------


def _parts(*records: int) -> PartitionStats:
    return PartitionStats(
        [PartitionRow(f"p={i}", 0, n, 1, 10, 0, 0) for i, n in enumerate(records)]
    )


def test_two_partitions_with_one_holding_most_rows_are_skewed() -> None:
    assert _parts(150, 10).skewed  # 93.8% in one of two partitions
    assert _parts(80, 20).skewed  # 4x the other one
    assert not _parts(60, 40).skewed
    assert not _parts(70, 30).skewed
    many = _parts(100, 20, 10)  # unchanged for three and more: the ratio to the median
    assert many.skewed and many.skew == pytest.approx(5.0)
    assert not _parts(30, 20, 10).skewed
    assert not _parts(10).skewed


def test_partitions_text_compares_two_partitions_with_each_other() -> None:
    from icefloe.cli.files_cmds import _skew_line

    skewed = _skew_line(_parts(150, 10)).plain
    assert skewed.startswith("skewed: p=0 holds 93.8% of the rows, 15.0x the other partition")
    balanced = _skew_line(_parts(60, 40)).plain
    assert balanced.startswith("balanced: the largest partition (p=0) has 1.5x the other's rows")


def test_report_counts_records_and_calls_skew_by_share(tmp_path: Path) -> None:
    from icefloe.cli.report import render_report

    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "region", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "region"))
    props = {"write.delete.mode": "merge-on-read"}  # deletion vectors: 160 records, 154 rows
    t = cat.create_table("db.t", schema, partition_spec=spec, format_version=3, properties=props)
    regions = ["eu"] * 150 + ["us"] * 10
    t.append(pa.table({"id": pa.array(range(160), pa.int64()), "region": regions}))
    t.delete("id < 6")
    html = render_report(cat.load_table("db.t"))
    cat.close()
    assert "<div class='k'>rows</div>" not in html
    assert "<div class='k'>records</div><div class='v'>160</div>" in html
    assert "<b>skewed</b>: the largest partition (region=eu) holds 93.8% of the rows" in html
    assert "15.0× the other partition" in html


# -- 7. exit codes -------------------------------------------------------------------------------


def test_expiring_a_missing_snapshot_is_not_found(scratch: CliWorld) -> None:
    for args in (("--snapshot-id", "1"), ("--snapshot-id", "1", "--dry-run")):
        r = run(scratch, "expire", "db.events", *args)
        assert r.exit_code == EXIT_NOT_FOUND, (args, r.stderr)
        assert "1" in _one_line_error(r.stderr)


def test_catalog_changes_on_a_path_are_refused(scratch: CliWorld) -> None:
    meta = scratch.catalog().load_table("db.plain").metadata_location
    local = meta.removeprefix("file://")
    for args in (
        ("drop", "table", meta),
        ("drop", "table", local),
        ("drop", "table", "--purge", local),
        ("rename", meta, "db.other"),
        ("rename", "db.plain", local),
    ):
        r = run(scratch, *args)
        assert r.exit_code == EXIT_BAD_INPUT, (args, r.stdout, r.stderr)
        assert "read-only" in _one_line_error(r.stderr), args
    cat = scratch.catalog()
    assert cat.table_exists("db.plain") and not cat.table_exists("db.other")
    assert Path(local).is_file()


def test_check_delta_of_a_missing_table_is_not_found(world: CliWorld, tmp_path: Path) -> None:
    for command in ("check-delta", "convert-delta"):
        r = run(world, command, str(tmp_path / "nowhere"))
        assert r.exit_code == EXIT_NOT_FOUND, (command, r.stderr)
        line = _one_line_error(r.stderr)
        assert "NoSuchTableError" not in line and "nowhere" in line


# -- 8. the Delta commands' usage and catalog ----------------------------------------------------


def test_delta_commands_name_themselves_in_usage(world: CliWorld) -> None:
    for command in ("check-delta", "convert-delta"):
        r = run(world, command)
        assert r.exit_code == EXIT_BAD_INPUT
        assert f"usage: icefloe {command} " in r.stderr, r.stderr
        helped = run(world, command, "--help")
        assert helped.exit_code == 0
        assert f"usage: icefloe {command} " in helped.stdout


def test_convert_delta_writes_to_the_default_catalog(tmp_path: Path) -> None:
    from support.delta import fixture

    w = empty_world(tmp_path / "world")
    w.catalog().create_namespace("db")
    root = fixture("basic", tmp_path)
    r = run(w, "convert-delta", str(root), "--identifier", "db.x")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["mode"] == "full"
    table = w.catalog().load_table("db.x")
    assert table.scan().to_arrow().num_rows > 0
    again = run(w, "--catalog", CATALOG, "convert-delta", str(root), "--identifier", "db.x")
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["mode"] == "unchanged"
    alone = run(w, "convert-delta", str(root), "--catalog", CATALOG)
    assert alone.exit_code == EXIT_BAD_INPUT
    assert "--identifier" in _one_line_error(alone.stderr)


# -- 9. the report of an unpartitioned table -----------------------------------------------------


def test_report_of_an_unpartitioned_table(world: CliWorld) -> None:
    from icefloe.cli.report import render_report

    html = render_report(world.catalog().load_table("db.plain"))
    assert "Partitioned by unpartitioned" not in html
    assert "Unpartitioned. Current snapshot" in html
    events = render_report(world.catalog().load_table("db.events"))
    assert "Partitioned by region = identity. Current snapshot" in events


# -- 10. renaming a table to itself --------------------------------------------------------------


def test_renaming_a_table_to_itself_changes_nothing(world: CliWorld) -> None:
    """As the catalogs (and Java's): nothing to do, said so; a missing table is not found."""
    before = world.catalog().load_table("db.plain").metadata_location
    r = run(world, "rename", "db.plain", "db.plain")
    assert r.exit_code == 0, r.stderr
    assert "nothing changed" in r.stdout
    missing = run(world, "rename", "db.nope", "db.nope")
    assert missing.exit_code == EXIT_NOT_FOUND
    _one_line_error(missing.stderr)
    assert world.catalog().load_table("db.plain").metadata_location == before
