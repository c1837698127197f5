"""Regressions of the command line: deleted-row counts (rewritten DVs, equality-delete keys),
the compaction dry run against the real run, ``scan --select`` column order, decimals in plain
notation, YAML values of catalog properties, out-of-range sizes and ages."""

from __future__ import annotations

import decimal
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.config import catalog_properties
from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.maintenance_cmds import parse_age
from icefloe.cli.render import parse_size
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import DecimalType, LongType, NestedField, StringType
from support.cli import run
from support.cli_tables import CliWorld, empty_world

CATALOG = "fixes"


@pytest.fixture
def world(tmp_path: Path) -> CliWorld:
    return empty_world(tmp_path, CATALOG)


def _catalog(world: CliWorld) -> SqlCatalog:
    key = f"ICEFLOE_CATALOG__{CATALOG.upper()}__"
    cat = SqlCatalog(CATALOG, uri=world.env[key + "URI"], warehouse=world.env[key + "WAREHOUSE"])
    if not cat.namespace_exists("db"):
        cat.create_namespace("db")
    return cat


def _by_p(world: CliWorld, name: str) -> Any:
    """A v2 merge-on-read table ``name`` (``id``, ``p``) partitioned by ``p``."""
    return _catalog(world).create_table(
        name,
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "p", StringType())),
        partition_spec=PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "p")),
        format_version=2,
        properties={"write.delete.mode": "merge-on-read"},
    )


def _ids(n: int) -> pa.Array:
    return pa.array(range(n), pa.int64())


# --- deleted rows: rewritten deletion vectors and equality-delete keys ---------------------------


def test_snapshots_count_a_rewritten_dv_once(world: CliWorld) -> None:
    t = _catalog(world).create_table(
        "db.dv",
        Schema(NestedField(1, "id", LongType(), required=True)),
        format_version=3,
        properties={"write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"id": _ids(100)}))
    for k in range(1, 4):  # each delete rewrites the file's DV with the old positions
        t.delete(f"id < {10 * k}")
    doc = run(world, "snapshots", "db.dv", "--json").json()
    assert [p["deleted_records"] for p in doc["snapshots"]] == [0, 10, 10, 10]
    assert all(p["equality_delete_keys"] == 0 for p in doc["snapshots"])
    text = run(world, "snapshots", "db.dv").stdout
    assert "eq keys" not in text
    rows = [line.split() for line in text.splitlines() if " delete " in line]
    assert [r[r.index("0") + 1] for r in rows] == ["10", "10", "10"]  # the -rows column


def _eq_table(world: CliWorld) -> object:
    t = _catalog(world).create_table(
        "db.eq",
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType())),
        format_version=2,
        properties={"write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"id": _ids(100), "s": [str(i) for i in range(100)]}))
    # 50 keys, of which two match rows (ids 0 and 1)
    keys = pa.array([0, 1, *range(1000, 1048)], pa.int64())
    t.delete_by_keys(pa.table({"id": keys}), ["id"])
    return t


def test_equality_delete_keys_are_not_rows(world: CliWorld) -> None:
    _eq_table(world)
    snaps = run(world, "snapshots", "db.eq", "--json").json()["snapshots"]
    assert [(p["deleted_records"], p["equality_delete_keys"]) for p in snaps] == [(0, 0), (0, 50)]
    assert "eq keys" in run(world, "snapshots", "db.eq").stdout

    files = run(world, "files", "db.eq", "--json").json()
    assert (files["delete_files"], files["delete_records"]) == (1, 0)
    assert (files["equality_delete_files"], files["equality_delete_keys"]) == (1, 50)
    head = run(world, "files", "db.eq").stdout.splitlines()[1]
    assert "1 delete file (50 equality-delete keys in 1 file)" in head
    assert "deleted row" not in head

    health = run(world, "health", "db.eq", "--json").json()
    debt = next(c for c in health["checks"] if c["name"] == "delete debt")
    assert debt["verdict"] == "info"  # 50 keys over 100 rows is not a 50% debt
    assert debt["value"] == "50 equality-delete keys in 1 equality delete file"
    assert (debt["measured"]["deleted_rows"], debt["measured"]["ratio"]) == (0, 0.0)
    assert debt["measured"]["equality_delete_keys"] == 50


def test_partitions_keep_equality_keys_apart(world: CliWorld) -> None:
    t = _by_p(world, "db.peq")
    t.append(pa.table({"id": _ids(20), "p": ["a", "b"] * 10}))
    t.delete_by_keys(pa.table({"id": pa.array([0, 100, 101], pa.int64())}), ["id"])
    t.delete("id = 5")
    doc = run(world, "partitions", "db.peq", "--json").json()
    by_label = {p["label"]: p for p in doc["partitions"]}
    counts = {
        label: (p["delete_records"], p["equality_delete_keys"], p["equality_delete_files"])
        for label, p in by_label.items()
    }
    # the equality delete file went to a (key 0), the position delete to b (id 5)
    assert counts == {"p=a": (0, 3, 1), "p=b": (1, 0, 0)}
    lines = run(world, "partitions", "db.peq").stdout.splitlines()
    assert next(line for line in lines if line.startswith("p=a")).endswith(" 3 keys in 1")
    assert next(line for line in lines if line.startswith("p=b")).endswith(" 1 in 1")
    html = world.root / "r.html"
    assert run(world, "report", "db.peq", "--output", str(html)).exit_code == 0
    assert "3 equality-delete keys" in html.read_text()


# --- compaction: the dry run announces what the real run does ------------------------------------


def _compact_table(world: CliWorld) -> None:
    t = _by_p(world, "db.c")
    for _ in range(2):
        t.append(pa.table({"id": _ids(20), "p": ["a", "b"] * 10}))
    t.delete_by_keys(pa.table({"id": pa.array([0, 1], pa.int64())}), ["id"])  # equality
    t.delete("id = 5")  # position deletes naming their data files


def test_compact_dry_run_counts_the_delete_files_the_real_run_removes(world: CliWorld) -> None:
    _compact_table(world)
    keys = ("groups", "rewritten_data_files", "removed_delete_files")
    dry = run(world, "compact", "db.c", "--dry-run", "--json").json()
    real = run(world, "compact", "db.c", "--json").json()
    assert {k: dry[k] for k in keys} == {k: real[k] for k in keys}
    assert real["removed_delete_files"] == 2  # the equality deletes stay
    left = run(world, "files", "db.c", "--json").json()
    assert (left["delete_files"], left["equality_delete_files"]) == (2, 2)


def test_compact_dry_run_does_not_guess_dangling_deletes(world: CliWorld) -> None:
    _compact_table(world)
    dry = run(world, "compact", "db.c", "--dry-run", "--remove-dangling-deletes", "--json").json()
    assert dry["removed_dangling_delete_files"] is None  # known only after compaction
    assert dry["dangling_delete_files_now"] == 0
    text = run(world, "compact", "db.c", "--dry-run", "--remove-dangling-deletes").stdout
    assert "unknown in a dry run" in text
    real = run(world, "compact", "db.c", "--remove-dangling-deletes", "--json").json()
    assert real["removed_dangling_delete_files"] == 2
    # nothing left to compact: the dry run's count is exact again
    again = run(world, "compact", "db.c", "--dry-run", "--remove-dangling-deletes", "--json")
    assert again.json()["removed_dangling_delete_files"] == 0


# --- scan: column order and decimals -------------------------------------------------------------


def test_scan_writes_columns_in_the_selected_order(world: CliWorld) -> None:
    t = _catalog(world).create_table(
        "db.o", Schema(NestedField(1, "id", LongType()), NestedField(2, "amount", LongType()))
    )
    t.append(pa.table({"id": _ids(2), "amount": pa.array([100, 200], pa.int64())}))
    csv = run(world, "scan", "db.o", "--select", "amount,id", "--format", "csv").stdout
    assert csv.splitlines() == ['"amount","id"', "100,0", "200,1"]
    lines = run(world, "scan", "db.o", "--select", "amount, id", "--json").stdout.splitlines()
    assert lines[0] == '{"amount": 100, "id": 0}'
    table = run(world, "scan", "db.o", "--select", "amount,id").stdout
    assert table.splitlines()[0].split() == ["amount", "id"]
    out = world.root / "o.parquet"
    run(world, "scan", "db.o", "--select", "amount,id", "--format", "parquet", "-o", str(out))
    import pyarrow.parquet as pq

    assert pq.read_schema(out).names == ["amount", "id"]


def test_scan_says_when_rows_are_left_undrawn(world: CliWorld) -> None:
    t = _catalog(world).create_table("db.m", Schema(NestedField(1, "id", LongType())))
    t.append(pa.table({"id": _ids(10)}))
    r = run(world, "scan", "db.m", "--max-rows", "3")
    assert r.stderr.strip() == (
        "first 3 drawn; the scan has more rows (raise --max-rows, or use another --format)"
    )
    assert run(world, "scan", "db.m", "--max-rows", "10").stderr.strip() == "10 rows"
    one = run(world, "scan", "db.m", "--filter", "id = 4")
    assert one.exit_code == 0 and one.stderr.strip() == "1 row"  # not "1 rows"


def test_decimals_in_plain_notation(world: CliWorld) -> None:
    t = _catalog(world).create_table(
        "db.money",
        Schema(NestedField(1, "id", LongType()), NestedField(2, "amount", DecimalType(38, 10))),
    )
    vals = ["0.0000000000", "0.0000001000", "-0.0000000001", "12.5000000000"]
    t.append(
        pa.table(
            {
                "id": _ids(4),
                "amount": pa.array([decimal.Decimal(v) for v in vals], pa.decimal128(38, 10)),
            }
        )
    )
    lines = run(world, "scan", "db.money", "--json").stdout.splitlines()
    assert [line.split('"amount": ')[1].rstrip("}") for line in lines] == [f'"{v}"' for v in vals]
    csv = run(world, "scan", "db.money", "--format", "csv").stdout.splitlines()
    assert [line.split(",")[1].strip('"') for line in csv[1:]] == vals
    table = run(world, "scan", "db.money").stdout
    for v in vals:
        assert v in table
    assert "E-" not in table


# --- catalog properties from YAML ----------------------------------------------------------------


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    config = tmp_path / "icefloe.yaml"
    config.write_text(body)
    monkeypatch.setenv("ICEFLOE_CONFIG", str(config))
    for key in list(__import__("os").environ):
        if key.startswith("ICEFLOE_CATALOG__"):
            monkeypatch.delenv(key)


def test_yaml_null_is_absent_and_booleans_lowercase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _config(
        tmp_path,
        monkeypatch,
        f"catalog:\n  c:\n    type: sql\n    uri: sqlite:///{tmp_path}/c.db\n"
        "    warehouse: ~\n    flag: true\n    other: no\n    n: 5\n",
    )
    _, props, _ = catalog_properties("c", {})
    assert "warehouse" not in props
    assert (props["flag"], props["other"], props["n"]) == ("true", "false", "5")
    cat = load_catalog("c")
    cat.create_namespace("n")
    with pytest.raises(ValidationError, match="no location"):
        cat.create_table("n.t", Schema(NestedField(1, "a", LongType())))
    assert not (tmp_path / "None").exists()


@pytest.mark.parametrize("value", ["{a: 1}", "[1, 2]"])
def test_yaml_nested_values_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    _config(tmp_path, monkeypatch, f"catalog:\n  c:\n    type: sql\n    s3.opts: {value}\n")
    with pytest.raises(ValidationError, match=r"s3\.opts"):
        catalog_properties("c", {})


# --- out-of-range sizes and ages -----------------------------------------------------------------


@pytest.mark.parametrize("text", ["inf", "nan", "-inf", "1e400", "1e19", "9999999999TiB"])
def test_sizes_out_of_range_are_bad_input(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_size(text)


@pytest.mark.parametrize("text", ["99999999999999999999w", "9" * 400 + "d", "100000w"])
def test_ages_out_of_range_are_bad_input(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_age(text, 1_800_000_000_000)


def test_out_of_range_values_exit_2(world: CliWorld) -> None:
    _catalog(world).create_table("db.x", Schema(NestedField(1, "id", LongType())))
    for args in (
        ("compact", "db.x", "--dry-run", "--target-file-size", "inf"),
        ("compact", "db.x", "--dry-run", "--target-file-size", "1e400"),
        ("rewrite-manifests", "db.x", "--dry-run", "--target-manifest-size", "nan"),
        ("orphans", "db.x", "--dry-run", "--older-than", "99999999999999999999w"),
        ("scan", "db.x", "--as-of", "99999999999999999999999"),
    ):
        r = run(world, *args)
        assert r.exit_code == 2, (args, r.stderr)
        assert r.stderr.startswith("error: "), r.stderr


# --- metadata written oddly by other writers ------------------------------------------------------


def _rewritten(world: CliWorld, name: str, change: Callable[[dict[str, Any]], None]) -> str:
    """A copy of table ``name``'s metadata file changed by ``change``; its path."""
    location = _catalog(world).load_table(name).metadata_location
    meta = json.loads(Path(urlparse(location).path).read_text())
    change(meta)
    path = world.root / f"{name}.changed.metadata.json"
    path.write_text(json.dumps(meta))
    return str(path)


def test_snapshot_times_out_of_the_calendar_are_shown_as_numbers(world: CliWorld) -> None:
    """A snapshot time no calendar date holds (microseconds in timestamp-ms: year 58000;
    or before year 1) made describe, snapshots, partitions and report fail with a bare
    ValueError or OverflowError; they show the number and say it is out of range."""
    t = _by_p(world, "db.when")
    t.append(pa.table({"id": _ids(2), "p": ["a", "b"]}))
    t.append(pa.table({"id": _ids(1), "p": ["a"]}))
    second = t.current_snapshot().timestamp_ms

    def skew(meta: dict[str, Any]) -> None:
        meta["snapshots"][0]["timestamp-ms"] = -62_135_596_800_001  # before 0001-01-01
        meta["snapshots"][1]["timestamp-ms"] = second * 1000
        meta["last-updated-ms"] = second * 1000

    path = _rewritten(world, "db.when", skew)
    for args in (("describe",), ("snapshots",), ("partitions",), ("files",), ("health",)):
        r = run(world, *args, path, width=160)
        assert r.exit_code == 0, (args, r.stderr)
        if args[0] in ("describe", "snapshots"):
            assert f"{second * 1000} ms (out of range)" in r.stdout, r.stdout
    assert "-62135596800001 ms (out of range)" in run(world, "snapshots", path, width=160).stdout
    narrow = run(world, "snapshots", path, width=60)
    assert narrow.exit_code == 0, narrow.stderr
    out = world.root / "when.html"
    r = run(world, "report", path, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert f"{second * 1000} ms (out of range)" in out.read_text(encoding="utf-8")
    doc = run(world, "describe", path, "--json").json()["current_snapshot"]
    assert doc["timestamp_ms"] == second * 1000 and doc["committed_at"] is None
    times = [s["timestamp_ms"] for s in run(world, "snapshots", path, "--json").json()["snapshots"]]
    assert times == [-62_135_596_800_001, second * 1000]
    records = run(world, "partitions", path, "--json").json()["partitions"]
    assert sorted((p["label"], p["records"]) for p in records) == [("p=a", 2), ("p=b", 1)]


def test_counts_a_summary_lacks_are_unknown_not_zero(world: CliWorld) -> None:
    """Summaries holding only the operation (minimal and v1 writers) made the report's cards
    say 0 records, 0 files and 0 B and snapshots --json say 0 rows added; they are unknown:
    ``-`` as describe shows them, null in JSON. A summary that counts and leaves a count out
    (as Iceberg Java leaves out zeros) still means zero."""
    t = _by_p(world, "db.bare")
    t.append(pa.table({"id": _ids(3), "p": ["a", "a", "b"]}))
    t.append(pa.table({"id": _ids(1), "p": ["b"]}))

    def minimal(meta: dict[str, Any]) -> None:
        for snap in meta["snapshots"]:
            snap["summary"] = {"operation": snap["summary"]["operation"]}
        first = meta["snapshots"][0]["summary"]
        first.update({"total-records": "3", "added-data-files": "2"})  # no added-records

    path = _rewritten(world, "db.bare", minimal)
    out = world.root / "bare.html"
    r = run(world, "report", path, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    html = out.read_text(encoding="utf-8")
    cards = dict(re.findall(r"<div class='k'>(.*?)</div><div class='v'>(.*?)</div>", html))
    assert [cards[k] for k in ("records", "data files", "delete files", "size")] == ["-"] * 4
    assert "3 data files" in html  # counted from the files
    snaps = run(world, "snapshots", path, "--json").json()["snapshots"]
    assert [(s["added_records"], s["deleted_records"]) for s in snaps] == [(0, 0), (None, None)]
    assert [s["total_records"] for s in snaps] == [3, None]
    shown = run(world, "snapshots", path, width=120).stdout.splitlines()
    row = next(line for line in shown if line.startswith(str(snaps[1]["snapshot_id"])))
    assert row.split()[-3:] == ["-", "-", "-"], row  # +rows, -rows, size


def test_describe_refuses_a_summary_size_that_is_not_a_number(world: CliWorld) -> None:
    """``total-files-size: "12.5"`` made describe fail with a bare ValueError (exit 1) where
    snapshots and report refuse the metadata as bad input; describe does the same."""
    t = _by_p(world, "db.odd")
    t.append(pa.table({"id": _ids(3), "p": ["a", "a", "b"]}))

    def odd(meta: dict[str, Any]) -> None:
        meta["snapshots"][0]["summary"]["total-files-size"] = "12.5"

    path = _rewritten(world, "db.odd", odd)
    for cmd in ("describe", "snapshots", "report"):
        r = run(world, cmd, path)
        assert r.exit_code == 2, (cmd, r.stderr)
        assert r.stderr == "error: summary property 'total-files-size' is not a number: '12.5'\n"
        assert r.stdout == "", (cmd, r.stdout)


# --- smaller ones -------------------------------------------------------------------------------


def test_properties_set_key_value_with_an_equals_sign(world: CliWorld) -> None:
    _catalog(world).create_table("db.p", Schema(NestedField(1, "id", LongType())))
    r = run(world, "properties", "set", "db.p", "comment", "a=b")
    assert r.exit_code == 0, r.stderr
    assert _catalog(world).load_table("db.p").properties["comment"] == "a=b"
    assert run(world, "properties", "set", "db.p", "x=1", "y=2").exit_code == 0
    assert _catalog(world).load_table("db.p").properties["y"] == "2"


@pytest.mark.parametrize("name", ["", "a..b", "a."])
def test_an_empty_namespace_name_is_bad_input(world: CliWorld, name: str) -> None:
    _catalog(world)
    r = run(world, "create", "namespace", name)
    assert r.exit_code == 2, r.stderr


# --- pictures at narrow widths ----------------------------------------------------------------


def test_narrow_pictures_keep_ids_labels_and_tag_names(world: CliWorld) -> None:
    """Snapshot ids (what --snapshot takes) and partition labels are never cut, however narrow
    the terminal (bars shrink first); long lane names are capped; a tag's label is never drawn
    over another's."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType())
    )
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "region"))
    t = _catalog(world).create_table("db.narrow", schema, partition_spec=spec)
    for region in ("north-east-1", "south-west-2", "central-9"):
        t.append(pa.table({"id": _ids(3), "region": [region] * 3}))
    snaps = [s.snapshot_id for s in t.refresh().snapshots()]
    branch = "a-very-long-branch-name-for-the-nightly-backfill-job"
    with t.manage_snapshots() as m:
        m.create_branch(branch, snaps[0])
        for k, sid in enumerate(snaps):
            m.create_tag(f"tag-{k}-release", sid)
    for width in (40, 60):
        out = run(world, "partitions", "db.narrow", width=width).stdout
        table = out.split("─\n", 1)[1].split("balanced")[0]
        labels = "".join(line.split()[0] for line in table.splitlines())  # folded or not
        for region in ("north-east-1", "south-west-2", "central-9"):
            assert f"region={region}" in labels, (width, out)
        out = run(world, "snapshots", "db.narrow", width=width).stdout
        assert all(str(sid) in out for sid in snaps), (width, out)
    out = run(world, "snapshots", "db.narrow", width=100).stdout
    assert all(str(sid) in out for sid in snaps), out
    tags_line = next(line for line in out.splitlines() if line.startswith("tags"))
    assert "◆ta◆" not in tags_line and "tag-0-release" in tags_line, tags_line


def test_snapshots_count_the_refs_of_a_snapshot_with_many(world: CliWorld) -> None:
    """Hundreds of refs on one snapshot: the picture names the first of each kind and counts
    the others, the table lists what fits and counts the rest."""
    t = _catalog(world).create_table("db.refs", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": _ids(2)}))
    sid = t.current_snapshot().snapshot_id
    with t.manage_snapshots() as m:
        for k in range(120):
            m.create_tag(f"tag{k:03}", sid)
        for k in range(30):
            m.create_branch(f"br{k:02}", sid)
    t.append(pa.table({"id": _ids(1)}))
    out = run(world, "snapshots", "db.refs", width=120).stdout
    lines = out.splitlines()
    assert next(x for x in lines if x.startswith("tags")).split() == ["tags", "◆tag000", "+119"]
    assert next(x for x in lines if x.startswith("branches")).split() == [
        "branches",
        "⎇br00",
        "+29",
    ]
    row = next(x for x in lines if x.startswith(str(sid)))
    assert row.endswith("more") and "⎇br00 ⎇br01" in row, row
    shown = row.count("⎇") + row.count("◆")
    assert row.endswith(f"+{150 - shown} more"), row


def test_scan_shows_variants_as_json_text(world: CliWorld) -> None:
    """A variant column is drawn, and written as JSON Lines or CSV, as its JSON text; Parquet
    output keeps the encoded value."""
    import json

    import pyarrow.parquet as pq

    from icefloe.types import VariantType

    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "v", VariantType())
    )
    t = _catalog(world).create_table("db.var", schema, format_version=3)
    t.append({"id": [1, 2, 3], "v": [{"a": 1, "b": [1, 2]}, "x", None]})
    table = run(world, "scan", "db.var").stdout
    assert '{"a":1,"b":[1,2]}' in table and '"x"' in table
    lines = run(world, "scan", "db.var", "--format", "json").stdout.splitlines()
    got = {r["id"]: r["v"] for r in map(json.loads, lines)}
    assert got == {1: '{"a":1,"b":[1,2]}', 2: '"x"', 3: None}
    csv = run(world, "scan", "db.var", "--format", "csv").stdout
    assert '1,"{""a"":1,""b"":[1,2]}"' in csv
    out = world.root / "var.parquet"
    run(world, "scan", "db.var", "--format", "parquet", "-o", str(out))
    assert pq.read_schema(out).field("v").type.num_fields == 2  # metadata, value


def test_health_of_snapshots_dated_in_the_future_gives_no_negative_age(world: CliWorld) -> None:
    """Snapshots written by a machine whose clock runs ahead: ``health`` said the oldest was
    "-3.0 days old" (and "1 snapshots"); it says how far from now it is dated."""
    t = _by_p(world, "db.ahead")
    t.append(pa.table({"id": _ids(2), "p": ["a", "b"]}))
    future = int(time.time() * 1000) + 3 * 86_400_000

    def ahead(meta: dict[str, Any]) -> None:
        meta["snapshots"][0]["timestamp-ms"] = future
        meta["last-updated-ms"] = future

    path = _rewritten(world, "db.ahead", ahead)
    checks = run(world, "health", path, "--json").json()["checks"]
    summary = next(c["value"] for c in checks if c["name"] == "snapshots")
    assert "oldest dated 3 days from now" in summary, summary
    assert summary.startswith("1 snapshot, "), summary


def test_health_gives_a_new_table_its_age_in_units_people_read(world: CliWorld) -> None:
    """A table written a minute ago was "0.0 days old; 0 past retention"."""
    t = _by_p(world, "db.fresh")
    t.append(pa.table({"id": _ids(2), "p": ["a", "b"]}))
    checks = run(world, "health", "db.fresh", "--json").json()["checks"]
    summary = next(c["value"] for c in checks if c["name"] == "snapshots")
    assert re.fullmatch(
        r"1 snapshot, oldest [\d.]+ (ms|seconds?|minutes?) old; none past retention", summary
    ), summary


def test_describe_names_a_few_refs_and_counts_the_rest(world: CliWorld) -> None:
    """A table with hundreds of refs: ``describe`` printed every one (a line per ref); it
    names ``main``, then branches, then tags up to a few and counts the others, while
    ``--json`` still lists them all."""
    import json

    t = _catalog(world).create_table("db.manyrefs", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": _ids(2)}))
    sid = t.current_snapshot().snapshot_id
    with t.manage_snapshots() as m:
        for k in range(200):
            m.create_tag(f"tag{k:03}", sid)
        for k in range(3):
            m.create_branch(f"br{k}", sid)
    out = run(world, "describe", "db.manyrefs", width=120).stdout
    assert len(out.splitlines()) < 60, out
    flat = " ".join(out.split())
    assert f"main (branch) -> {sid}, br0 (branch)" in flat, flat
    assert "tag003 (tag)" in flat and "tag004" not in flat, flat
    assert "and 196 tags more (--json lists them)" in flat, flat
    doc = json.loads(run(world, "describe", "db.manyrefs", "--json").stdout)
    assert len(doc["refs"]) == 204


def test_counts_read_as_words_with_thousands_separators(world: CliWorld) -> None:
    """``health`` said "in 1 groups" and "1 delete manifests", ``partitions`` and the report
    called the largest partition "((unpartitioned))", and ``files`` wrote "2000 of 2000" next
    to "2,000 data files"."""
    t = _catalog(world).create_table(
        "db.evolved",
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "p", StringType())),
        format_version=2,
        properties={"write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"id": _ids(2), "p": ["x", "x"]}))
    t.append(pa.table({"id": _ids(1), "p": ["x"]}))
    with t.update_spec() as s:
        s.add_field("p", "identity")
    t.append(pa.table({"id": pa.array([10, 11, 12, 13], pa.int64()), "p": ["a", "a", "b", "b"]}))
    t.delete("id = 1")  # a position delete in the first unpartitioned file
    checks = {c["name"]: c for c in run(world, "health", "db.evolved", "--json").json()["checks"]}
    assert checks["small files"]["detail"].endswith(" in 1 group"), checks["small files"]
    assert checks["small files"]["detail"].startswith("compaction would rewrite 2 files (")
    assert checks["manifests"]["value"].startswith("2 data manifests, 1 delete manifest,")
    text = run(world, "partitions", "db.evolved").stdout
    assert "balanced: the largest partition (unpartitioned) has 1.5x the median's rows" in text
    assert "((" not in text
    html = run(world, "report", "db.evolved", "-o", "-").stdout
    assert "the largest partition (unpartitioned) holds" in html and "((" not in html

    many = _catalog(world).create_table(
        "db.many",
        Schema(NestedField(1, "id", LongType(), required=True)),
        partition_spec=PartitionSpec(PartitionField(1, 1000, parse_transform("identity"), "id")),
        format_version=2,
    )
    many.append(pa.table({"id": _ids(1000)}))
    text = run(world, "files", "db.many", "--limit", "1").stdout
    assert "1,000 data files (" in text and "small files: 1,000 of 1,000 (100.0%)" in text, text
    value = {c["name"]: c for c in run(world, "health", "db.many", "--json").json()["checks"]}[
        "small files"
    ]["value"]
    assert value.startswith("1,000 of 1,000 data files (100.0%)"), value
