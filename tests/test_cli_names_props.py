"""The command line keeps names whole and readable, and reads tables other engines wrote:

- ``list`` and ``schema`` print long (unicode) names whole into a pipe, and fold rather than
  cut them at a width asked for;
- a stored property icefloe refuses (``write.target-file-size-bytes=128MB``) does not stop
  ``files``, ``health`` or ``report``: its default is used, ``health`` reports it with the
  command that removes it, the others say so in one ``warning:`` line;
- partition labels quote string values that could be misread (``k="a, ts_hour=x"``), and
  ``partitions --json`` has the values themselves;
- messages name tables as commands take them (``db."renamed/ü"``), and ``sql`` says that it
  runs no ``DROP``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from icefloe.cli.analysis import label_value
from icefloe.cli.app import cli
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.transforms import parse_transform
from support.cli import run, run_process
from support.cli_tables import CliWorld, empty_world

NS = "ns_" + "ü" * 100
TABLE = "t_" + "ñ" * 100
TARGET = "write.target-file-size-bytes"
DEFAULT_TARGET = 512 * 1024 * 1024


@pytest.fixture
def world(tmp_path: Path) -> CliWorld:
    w = empty_world(tmp_path / "world")
    w.catalog().create_namespace("db")
    return w


def _piped(world: CliWorld, *args: str) -> Any:
    """``icefloe ARGS`` into a pipe, without ``--width`` (the terminal says 80 columns)."""
    env = {**world.env, "COLUMNS": "80"}
    return CliRunner().invoke(cli, ["--no-color", *args], env=env, catch_exceptions=False)


def _unfolded(text: str) -> str:
    """``text`` without blanks, line ends and tree guides: a folded name joined again."""
    return "".join(c for c in text if not c.isspace() and c not in "│├└─")


# --- long names ----------------------------------------------------------------------------------


def test_list_and_schema_print_long_names_whole(world: CliWorld) -> None:
    cat = world.catalog()
    cat.create_namespace(NS)
    cat.create_table(f"{NS}.{TABLE}", pa.schema([("id", pa.int64())]))
    cat.create_table(("db", "a.b"), pa.schema([("id", pa.int64())]))
    out = _piped(world, "list").stdout
    assert f"── {NS}\n" in out and f"── {TABLE}\n" in out
    assert '── "a.b"\n' in out  # as commands take it back
    out = _piped(world, "list", NS).stdout
    assert out.splitlines()[0] == f"clitest · {NS}"
    assert f"── {TABLE}\n" in out
    assert _piped(world, "schema", f"{NS}.{TABLE}").stdout.splitlines()[0] == f"{NS}.{TABLE}"
    for width in (40, 80):
        for args in (("list",), ("list", NS), ("schema", f"{NS}.{TABLE}")):
            r = run(world, *args, width=width)
            assert r.exit_code == 0, r.stderr
            # folded to the width asked for, never cut
            assert max(len(line) for line in r.stdout.splitlines()) <= width
            shown = _unfolded(r.stdout)
            if args[0] == "list":
                assert TABLE in shown and NS in shown, (args, r.stdout)
            else:
                assert f"{NS}.{TABLE}" in shown, r.stdout


def test_list_of_a_missing_namespace_names_it_as_commands_take_it(world: CliWorld) -> None:
    r = run(world, "list", '"a.b"')
    assert r.exit_code == 3
    assert r.stderr.strip() == "error: namespace '\"a.b\"' does not exist"


# --- stored properties icefloe refuses -------------------------------------------------------


def _with_properties(world: CliWorld, props: dict[str, str], name: str = "db.bp") -> Path:
    """A v2 table ``name`` with one data file, and a copy of its current metadata file with
    ``props`` stored as another engine could have (icefloe refuses to set them)."""
    t = world.catalog().create_table(name, pa.schema([("id", pa.int64())]), format_version=2)
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    location = Path(t.metadata_location.removeprefix("file://"))
    meta = json.loads(location.read_text())
    meta["properties"].update(props)
    crafted = location.with_name("99999-crafted.metadata.json")
    crafted.write_text(json.dumps(meta))
    return crafted


def _registered(world: CliWorld, props: dict[str, str]) -> str:
    """The catalog table ``db.reg`` whose current metadata stores ``props``."""
    crafted = _with_properties(world, props, "db.src")
    world.catalog().register_table("db.reg", crafted.as_uri())
    return "db.reg"


@pytest.mark.parametrize("value", ["128MB", "0", "abc"])
def test_files_reads_a_refused_target_size_as_its_default(world: CliWorld, value: str) -> None:
    path = str(_with_properties(world, {TARGET: value}))
    r = run(world, "files", path, "--json")
    assert r.exit_code == 0, r.stderr
    assert r.json()["small_file_threshold"] == DEFAULT_TARGET * 3 // 4
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: table property {TARGET}=")
    assert lines[0].endswith("; using the default")
    # a target given on the command line needs none: no warning
    r = run(world, "files", path, "--target-file-size", "1MiB")
    assert r.exit_code == 0 and r.stderr == ""


@pytest.mark.parametrize(
    "props",
    [
        {TARGET: "128MB"},
        {"write.format.default": "PARQUET "},
        {"write.metadata.delete-after-commit.enabled": "yes"},
    ],
    ids=["target", "format", "boolean"],
)
def test_health_reports_a_refused_property_and_checks_the_rest(
    world: CliWorld, props: dict[str, str]
) -> None:
    name = _registered(world, props)
    r = run(world, "health", name, "--json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""  # said in the check, not as a warning
    checks = {c["name"]: c for c in r.json()["checks"]}
    assert {"small files", "delete debt", "manifests", "snapshots", "metadata log"} <= set(checks)
    (key,) = props
    bad = checks["properties"]
    assert bad["verdict"] == "warn"
    assert bad["measured"]["invalid"] == props
    assert key in bad["value"] and "(using the default)" in bad["value"]
    assert bad["fix"] == f"icefloe properties remove {name} {key}"
    text = run(world, "health", name).stdout
    assert "properties" in text and "1 to act on" in text
    # the fix works on the table and the check goes
    assert run(world, *bad["fix"].split()[1:]).exit_code == 0
    names = [c["name"] for c in run(world, "health", name, "--json").json()["checks"]]
    assert "properties" not in names


def test_health_of_a_metadata_file_points_to_the_catalog_for_the_fix(world: CliWorld) -> None:
    path = str(_with_properties(world, {TARGET: "128MB", "gc.enabled": "yes"}))
    r = run(world, "health", path, "--json")
    assert r.exit_code == 0, r.stderr
    bad = next(c for c in r.json()["checks"] if c["name"] == "properties")
    assert bad["fix"] is None
    # gc.enabled is not removed (its default, true, would turn deletion on): it is set to
    # what it is read as
    assert (
        f"icefloe properties remove TABLE {TARGET} && icefloe properties set TABLE gc.enabled "
        "false" in bad["detail"]
    )
    # gc.enabled is read as Java reads it, never as its default
    assert "gc.enabled='yes' is invalid: must be true or false (read as false)" in bad["value"]


def test_report_uses_defaults_and_warns_once_per_property(world: CliWorld, tmp_path: Path) -> None:
    props = {
        TARGET: "128MB",
        "write.format.default": "PARQUET ",
        "write.metadata.delete-after-commit.enabled": "yes",
    }
    path = str(_with_properties(world, props))
    out = tmp_path / "r.html"
    r = run_process(world, "report", path, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 3, r.stderr
    assert all(line.startswith("warning: table property ") for line in lines), r.stderr
    assert not any("health.py" in line or "Warning:" in line for line in lines), r.stderr
    html = out.read_text()
    assert "data-check='properties'" in html
    assert "PARQUET " in html  # the properties section shows what is stored


def test_a_lenient_property_warning_is_one_clean_line(world: CliWorld) -> None:
    """A warning raised while a command runs (a commit reads ``write.metadata.*`` leniently)
    is one ``warning:`` line, not Python's file, line and source line."""
    key = "write.metadata.delete-after-commit.enabled"
    name = _registered(world, {key: "yes"})
    r = run_process(world, "properties", "set", name, "comment", "x")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"warning: table property {key}='yes' is invalid: must be true or false; using the default"
    ]


# --- partition labels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("eu", "eu"),
        ("a b", "a b"),
        ("ü", "ü"),
        ("null", '"null"'),
        ("", '""'),
        ("a, ts_hour=x", '"a, ts_hour=x"'),
        ("k=v", '"k=v"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        (" lead", '" lead"'),
        ("trail ", '"trail "'),
        ("a\nb", '"a\\nb"'),
        ("\x1b[31m", '"\\x1b[31m"'),
    ],
)
def test_label_values_are_quoted_where_they_could_be_misread(value: str, label: str) -> None:
    assert label_value(value) == label


def test_partition_labels_tell_values_from_fields(world: CliWorld) -> None:
    import datetime as dt

    sch = pa.schema([("k", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
    spec = PartitionSpec(
        PartitionField(1, 1000, parse_transform("identity"), "k"),
        PartitionField(2, 1001, parse_transform("hour"), "ts_hour"),
    )
    t = world.catalog().create_table("db.labels", sch, partition_spec=spec, format_version=2)
    when = dt.datetime(2024, 1, 2, 3, tzinfo=dt.timezone.utc)
    t.append(
        pa.table(
            {"k": ["null", None, "a, ts_hour=x", ""], "ts": [when] * 4},
            schema=sch,
        )
    )
    doc = run(world, "partitions", "db.labels", "--json").json()
    labels = {p["label"].rsplit(", ts_hour=", 1)[0]: p["partition"]["k"] for p in doc["partitions"]}
    assert labels == {
        'k="null"': "null",
        "k=null": None,
        'k="a, ts_hour=x"': "a, ts_hour=x",
        'k=""': "",
    }
    assert all(p["label"].endswith(", ts_hour=2024-01-02-03") for p in doc["partitions"])
    # the same labels in the files listing and the report's heat map
    files = run(world, "files", "db.labels", width=200).stdout
    assert 'k="a, ts_hour=x", ts_hour=' in files
    partitions = run(world, "partitions", "db.labels", width=200).stdout
    assert 'k="a, ts_hour=x", ts_hour=' in partitions


# --- names in messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("rename", 'db."renamed/ü"', "db.v1"), "table 'db.\"renamed/ü\"' does not exist"),
        (("rename", 'db."a.b"', "db.v1"), "table 'db.\"a.b\"' does not exist"),
        (("drop", "table", 'db."x/y"'), "table 'db.\"x/y\"' does not exist"),
        (("drop", "view", 'db."x/y"'), "view 'db.\"x/y\"' does not exist"),
        (("view", 'db."x/y"'), "view 'db.\"x/y\"' does not exist"),
        (("drop", "namespace", '"a/b"'), "namespace '\"a/b\"' does not exist"),
    ],
)
def test_missing_names_are_shown_as_commands_take_them(
    world: CliWorld, args: tuple[str, ...], message: str
) -> None:
    r = run(world, *args)
    assert r.exit_code == 3
    assert r.stderr.startswith(f"error: {message}"), r.stderr


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("drop table db.v2", "DROP"),
        ("drop table db.t", "DROP"),
        ("insert into db.t values (1)", "INSERT"),
        ("select 1; delete from db.t", "DELETE"),
    ],
)
def test_sql_refuses_statements_that_change_tables(world: CliWorld, query: str, kind: str) -> None:
    pytest.importorskip("duckdb")
    world.catalog().create_table("db.t", pa.schema([("id", pa.int64())]))
    r = run(world, "sql", query)
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith(f"error: sql: {kind} statements are not run: "), r.stderr
    if kind == "DROP":
        assert "icefloe drop table NAME" in r.stderr
    assert run(world, "list").stdout.count("── t\n") == 1  # nothing changed
