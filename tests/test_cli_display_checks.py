"""Regressions of the ``icefloe`` command's output: control characters in ``properties get``
and in the HTML report, long and commit-less branches in ``snapshots`` and the report's
timeline, ``serve --port`` out of range or taken, ``report -o -``, table names holding a dot,
``check-delta --json``, ``describe`` of a view, ``sql`` of a missing three-part name, the
retention ``health`` shows, and ``snapshots`` at 40 columns."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pyarrow as pa
import pytest

from icefloe.cli.analysis import PartitionRow
from icefloe.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OTHER
from icefloe.cli.names import show_name, split_name
from icefloe.cli.report_svg import escape
from icefloe.exceptions import ValidationError
from support.cli import run
from support.cli_tables import CliWorld, build_world, empty_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-display") / "world")


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    """A catalog with control characters in names and values, a table whose name holds a dot
    and one whose name holds a quote, a long branch and branches without commits of their
    own, and a view."""
    w = empty_world(tmp_path_factory.mktemp("cli-display-odd") / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = pa.schema([pa.field("col\x1b[31mred", pa.string()), pa.field("a\nb", pa.int64())])
    t = cat.create_table("db.ctl", schema, properties={"k": "v\x1b[2J", "y": "a\x1b[31mRED\x07"})
    t.append(pa.table({"col\x1b[31mred": ["x"], "a\nb": [1]}, schema=schema))
    ids = pa.schema([("id", pa.int64())])
    cat.create_table(("db", "x.y"), ids).append(pa.table({"id": [1, 2]}))
    cat.create_table(("db", 'we"ird'), ids).append(pa.table({"id": [7]}))
    h = cat.create_table("db.hist", ids, format_version=2)
    for i in range(4):
        h.append(pa.table({"id": [i * 1000]}))
    long_name = "feature-" + "x" * 100
    with h.manage_snapshots() as ms:
        ms.create_branch("stale", h.snapshots()[1].snapshot_id)
        ms.create_branch("dev")
        ms.create_branch(long_name)
    h.append(pa.table({"id": [5]}), branch=long_name)
    h.append(pa.table({"id": [6]}))
    cat.create_view("db.recent", "select id from hist", ids, dialect="spark")
    cat.close()
    yield w


def _no_raw_controls(text: str) -> None:
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), repr(text)


# -- 1. properties get: control characters written out ---------------------------------------


def test_properties_get_writes_control_characters_out(odd: CliWorld) -> None:
    every = run(odd, "properties", "get", "db.ctl")
    assert every.exit_code == 0, every.stderr
    _no_raw_controls(every.stdout)
    assert "k=v\\x1b[2J" in every.stdout.splitlines()
    assert "y=a\\x1b[31mRED\\x07" in every.stdout.splitlines()
    one = run(odd, "properties", "get", "db.ctl", "y")
    assert one.stdout == "a\\x1b[31mRED\\x07\n"
    as_json = run(odd, "properties", "get", "db.ctl", "--json")
    assert as_json.json()["k"] == "v\x1b[2J"  # JSON keeps the value itself


def test_location_writes_control_characters_out(tmp_path: Path) -> None:
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    where = tmp_path / "lo\x1b[2Jc"
    cat.create_table("db.t", pa.schema([("id", pa.int64())]), location=str(where))
    loc = run(w, "location", "db.t")
    assert loc.exit_code == 0, loc.stderr
    _no_raw_controls(loc.stdout)
    assert loc.stdout.rstrip("\n").endswith("lo\\x1b[2Jc")
    assert run(w, "location", "db.t", "--json").json()["location"].endswith("lo\x1b[2Jc")


# -- 2. and 3. snapshots: long branch names, branches without snapshots of their own ------------


def test_a_long_branch_name_keeps_the_timeline_on_the_terminal(odd: CliWorld) -> None:
    r = run(odd, "snapshots", "db.hist", width=80)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    lane = next(line for line in lines if line.startswith("feature-"))
    label = lane.split()[0]
    assert label.endswith("…") and len(label) == 24
    assert any(c.isalpha() for c in lane[24:])  # its own snapshot is drawn (a letter: no colour)
    axis = next(line for line in lines if "├" in line)
    assert axis.rstrip().endswith("┤")
    main = next(line for line in lines if line.startswith("main"))
    assert sum(c.isalpha() for c in main[len("main") :]) == 5


def test_branches_without_their_own_snapshots_are_marked(odd: CliWorld) -> None:
    r = run(odd, "snapshots", "db.hist", width=120)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    lane = next(line for line in lines if line.startswith("branches"))
    assert "⎇stale" in lane and "dev" in lane
    heads = run(odd, "snapshots", "db.hist", "--json").json()["branches"]
    rows = {line.split()[0]: line for line in lines if re.match(r"\d{15,19} ", line)}
    assert "⎇stale" in rows[str(heads["stale"])]
    assert "⎇dev" in rows[str(heads["dev"])]


def test_the_report_timeline_cuts_lane_names_and_marks_branch_heads(
    odd: CliWorld, tmp_path: Path
) -> None:
    out = tmp_path / "r.html"
    assert run(odd, "report", "db.hist", "-o", str(out)).exit_code == 0
    html = out.read_text(encoding="utf-8")
    svg = html[html.index('<svg id="timeline"') :]
    svg = svg[: svg.index("</svg>\n</section>") + 6]
    tree = ElementTree.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    lanes = [t for t in tree.iter(f"{ns}text") if t.get("class") == "lane"]
    labels = ["".join(t.itertext()).removeprefix(t.findtext(f"{ns}title") or "") for t in lanes]
    assert "feature-xx…" in labels and all(len(label) <= 11 for label in labels), labels
    marks = [e for e in tree.iter() if e.get("data-mark") == "branch"]
    assert {"".join(m.itertext()).split()[1] for m in marks} == {"stale", "dev"}


# -- 4. serve: a port out of range, a port taken ----------------------------------------------


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_serve_refuses_a_port_out_of_range(world: CliWorld, port: str) -> None:
    r = run(world, "serve", "--port", port)
    assert r.exit_code == EXIT_BAD_INPUT, r.stderr
    assert "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "--port" in errors[0] and "0 to 65535" in errors[0], r.stderr


def test_serve_on_a_port_in_use_is_another_failure(world: CliWorld) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run(world, "serve", "--host", "127.0.0.1", "--port", str(port))
    assert r.exit_code == EXIT_OTHER, r.stderr
    assert "Traceback" not in r.stderr


# -- 5. and 6. report: control characters, -o - ------------------------------------------------


def test_the_report_writes_control_characters_out(odd: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = run(odd, "report", "db.ctl", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    html = out.read_text(encoding="utf-8")
    _no_raw_controls(html)
    assert not re.search("[\x80-\x9f]", html)
    assert "col\\x1b[31mred" in html and "v\\x1b[2J" in html and "a\\nb" in html
    body = html[html.index("<body>") : html.index("</body>") + 7].replace("<br>", "<br/>")
    ElementTree.fromstring(f"<x>{body}</x>")  # well-formed


def test_the_report_writes_characters_xml_forbids_out(tmp_path: Path) -> None:
    """U+FFFE and U+FFFF in partition values, tag names and properties reached the report's
    SVG charts as they were, so the charts were not well-formed XML; they are written out."""
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    t = cat.create_table(
        "db.nc", pa.schema([("id", pa.int64()), ("p", pa.string())]), properties={"k": "v\ufffe"}
    )
    with t.update_spec() as spec:
        spec.add_field("p", "identity", "p")
    t.append(pa.table({"id": [1, 2], "p": ["ok", "bad\uffff"]}))
    with t.manage_snapshots() as ms:
        ms.create_tag("t\uffff", t.current_snapshot().snapshot_id)
    out = tmp_path / "r.html"
    r = run(w, "report", "db.nc", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    html = out.read_text(encoding="utf-8")
    charts = re.findall(r'<svg id="\w+".*?</svg>(?=\s*(?:<svg id=|</section>))', html, re.S)
    assert len(charts) == 3
    for chart in charts:
        ElementTree.fromstring(chart)  # well-formed
    body = html[html.index("<body>") : html.index("</body>") + 7].replace("<br>", "<br/>")
    ElementTree.fromstring(f"<x>{body}</x>")
    assert not re.search("[\ufffe\uffff]", html)
    assert "bad\\uffff" in html and "t\\uffff" in html and "v\\ufffe" in html
    assert escape("<\ud800>") == "&lt;\\ud800&gt;"  # a lone surrogate, were one to reach it


def test_report_to_standard_output(
    world: CliWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = run(world, "report", "db.events", "-o", "-")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>")
    assert "wrote" not in r.stdout
    assert not (tmp_path / "-").exists()


# -- 7. names that hold a dot or a quote ----------------------------------------------------------


def test_split_and_show_names() -> None:
    assert split_name("db.events") == ("db", "events")
    assert split_name('db."x.y"') == ("db", "x.y")
    assert split_name('db."we""ird"') == ("db", 'we"ird')
    assert split_name('"a.b".c') == ("a.b", "c")
    assert split_name("db.my table") == ("db", "my table")
    assert split_name("a.b.c") == ("a", "b", "c")
    for parts in [("db", "x.y"), ("db", 'we"ird'), ("a", "b", "c.d.e"), ("db", "plain")]:
        assert split_name(show_name(parts)) == parts
    assert show_name(("db", "plain")) == "db.plain"
    for bad in ['db."x.y', 'db."x"y', 'db."x".']:
        if bad.endswith("."):
            assert split_name(bad) == ("db", "x", "")
            continue
        with pytest.raises(ValidationError):
            split_name(bad)


def test_list_quotes_names_that_hold_a_dot_and_they_paste_back(odd: CliWorld) -> None:
    listed = run(odd, "list", "--json").json()["tables"]
    assert 'db."x.y"' in listed and 'db."we""ird"' in listed and "db.ctl" in listed
    tree = run(odd, "list").stdout
    assert '"x.y"' in tree and '"we""ird"' in tree
    for name, rows in (('db."x.y"', 2), ('db."we""ird"', 1), ("db.ctl", 1)):
        r = run(odd, "scan", name, "--format", "json")
        assert r.exit_code == 0, (name, r.stderr)
        assert len(r.stdout.splitlines()) == rows
        assert run(odd, "describe", name, "--json").json()["identifier"] == ".".join(
            split_name(name)
        )


def test_a_table_whose_name_holds_a_slash_is_named_in_quotes(tmp_path: Path) -> None:
    """Other engines name tables with a slash (``a</b>``): ``list`` printed ``db.a</b>``,
    which every command took for a path. ``list`` quotes such a part, and a slash inside a
    quoted part is part of a name; unquoted, the path error points to the quoted name."""
    import sqlite3

    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    cat.create_table("db.ab", pa.schema([("id", pa.int64())])).append(pa.table({"id": [1, 2]}))
    cat.close()
    with sqlite3.connect(tmp_path / "world" / "catalog.db") as db:  # as PyIceberg names it
        db.execute("UPDATE iceberg_tables SET table_name = 'a</b>' WHERE table_name = 'ab'")
    assert show_name(("db", "a/b")) == 'db."a/b"' and show_name(("db", "a\\b")) == 'db."a\\b"'
    assert split_name('db."a</b>"') == ("db", "a</b>")
    assert run(w, "list", "--json").json()["tables"] == ['db."a</b>"']
    assert '"a</b>"' in run(w, "list").stdout
    name = 'db."a</b>"'
    r = run(w, "scan", name, "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2
    for command in ("describe", "snapshots", "files", "health"):
        r = run(w, command, name, "--json")
        assert r.exit_code == 0, (command, r.stderr)
    assert run(w, "properties", "set", name, "k=v").exit_code == 0
    assert run(w, "properties", "get", name, "k").stdout.strip() == "v"
    r = run(w, "describe", "db.a</b>")
    assert r.exit_code == EXIT_NOT_FOUND
    assert "neither a metadata file nor a table directory" in r.stderr
    assert 'the catalog has a table named db."a</b>"' in r.stderr


def test_json_outputs_name_tables_and_views_as_list_does(odd: CliWorld) -> None:
    """The name fields of the JSON outputs paste back into a command (they were dotted
    without quotes: ``db.x.y``)."""
    for command in ("files", "snapshots", "health", "partitions", "orphans"):
        r = run(odd, command, 'db."x.y"', "--json")
        assert r.exit_code == 0, (command, r.stderr)
        assert r.json()["table"] == 'db."x.y"', command
    ids = pa.schema([("id", pa.int64())])
    odd.catalog().create_view(("db", "v.w"), "select 1 as id", ids, dialect="spark")
    assert run(odd, "view", 'db."v.w"', "--json").json()["view"] == 'db."v.w"'


def test_the_report_names_the_table_as_list_does(odd: CliWorld, tmp_path: Path) -> None:
    """The report's title and heading named table "x.y" of db as db.x.y, the name of table y
    of namespace db.x; they quote it as the other commands do."""
    import html

    out = tmp_path / "r.html"
    r = run(odd, "report", 'db."x.y"', "-o", str(out))
    assert r.exit_code == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?) · icefloe report</title>", page)
    heading = re.search(r"<h1>(.*?)</h1>", page)
    assert title and heading
    assert html.unescape(title.group(1)) == html.unescape(heading.group(1)) == 'db."x.y"'


def test_an_unquoted_name_with_a_dot_points_to_the_quoted_one(odd: CliWorld) -> None:
    r = run(odd, "scan", "db.x.y")
    assert r.exit_code == EXIT_NOT_FOUND
    assert 'db."x.y"' in r.stderr and len(r.stderr.splitlines()) == 1


def test_health_suggests_commands_with_the_quoted_name(odd: CliWorld) -> None:
    fixes = [c["fix"] for c in run(odd, "health", 'db."x.y"', "--json").json()["checks"]]
    assert any(f and "'db.\"x.y\"'" in f for f in fixes), fixes


# -- 8. smaller ones ----------------------------------------------------------------------------


def test_check_delta_takes_json(world: CliWorld, tmp_path: Path) -> None:
    from support.delta import fixture

    root = fixture("basic", tmp_path)
    r = run(world, "check-delta", str(root), "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    assert doc["ok"] is True and doc["failures"] == [] and isinstance(doc["version"], int)
    text = run(world, "check-delta", str(root))
    assert "satisfies IcebergCompatV3" in text.stdout


def test_describe_of_a_view_points_to_the_view_command(odd: CliWorld) -> None:
    r = run(odd, "describe", "db.recent")
    assert r.exit_code == EXIT_NOT_FOUND
    line = r.stderr.strip()
    assert "is a view" in line and "icefloe view db.recent" in line, line


def test_sql_of_a_missing_three_part_name_is_not_found(world: CliWorld) -> None:
    pytest.importorskip("duckdb")
    for query in ("select * from a.b.nope", "select * from db.nope", "select * from db.x.nope"):
        r = run(world, "sql", query)
        assert r.exit_code == EXIT_NOT_FOUND, (query, r.stderr)


def test_health_shows_a_short_retention_readably(tmp_path: Path) -> None:
    w = build_world(tmp_path / "world")
    for value, words in (
        ("1", "retention keeps 1 ms "),
        ("90000", "retention keeps 1.5 minutes "),
        ("432000000", "retention keeps 5 days "),
    ):
        assert (
            run(
                w, "properties", "set", "db.plain", "history.expire.max-snapshot-age-ms", value
            ).exit_code
            == 0
        )
        checks = run(w, "health", "db.plain", "--json").json()["checks"]
        detail = next(c["detail"] for c in checks if c["name"] == "snapshots")
        assert detail.startswith(words), detail


def test_snapshots_at_40_columns_keeps_numbers_whole(tmp_path: Path) -> None:
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    t = cat.create_table("db.big", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array(range(1_234_567), pa.int64())}))
    t.delete("id < 1000")
    r = run(w, "snapshots", "db.big", width=40)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 40
    heads = run(w, "snapshots", "db.big", "--json").json()["snapshots"]
    rows = [line for line in lines if re.match(r"\d{15,19} ", line)]
    assert len(rows) == 2
    for line, snap in zip(rows, heads, strict=True):
        assert line.split()[0] == str(snap["snapshot_id"])
        for n in (snap["added_records"], snap["deleted_records"]):  # separators may go
            assert {f"{n:,}", str(n)} & set(line.split()), (n, line)


def test_partitions_label_each_spec_by_its_own_fields(tmp_path: Path) -> None:
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string())])
    t = cat.create_table("db.t", schema, properties={"format-version": "2"})
    t.append(pa.table({"id": [1, 2], "cat": ["a", "null"]}))  # spec 0: unpartitioned
    with t.update_spec() as u:
        u.add_field("cat", "identity", "c")
    t.append(pa.table({"id": [3, 4, 5], "cat": ["a", "null", None]}))  # spec 1: by c
    with t.update_spec() as u:
        u.rename_field("c", "category")
        u.add_field("id", "bucket[2]", "id_b")
    t.append(pa.table({"id": [None], "cat": ["a"]}))  # spec 2: by category and id_b
    cat.close()
    r = run(w, "partitions", "db.t", "--json")
    assert r.exit_code == 0, r.stderr
    labels = {(p["label"], p["spec_id"]): p["records"] for p in json.loads(r.stdout)["partitions"]}
    assert labels == {
        ("(unpartitioned)", 0): 2,
        ('category="null"', 1): 1,  # the string, not a null
        ("category=null", 1): 1,
        ("category=a", 1): 1,  # not "category=a, id_b=null": spec 1 has no id_b
        ("category=a, id_b=null", 2): 1,
    }
    r = run(w, "files", "db.t", width=120)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("(unpartitioned)") == 1 and r.stdout.count(", id_b=") == 1


def test_partition_labels_of_specs_with_the_same_fields_name_the_spec() -> None:
    from icefloe.cli.analysis import _distinct_labels

    def row(label: str, spec_id: int) -> PartitionRow:
        return PartitionRow(label, spec_id, 1, 1, 1, 0, 0)

    out = _distinct_labels([row("k=1", 1), row("k=1", 2), row("k=2", 2), row("k=2", 2)])
    assert [r.label for r in out] == ["k=1 (spec 1)", "k=1 (spec 2)", "k=2", "k=2"]


def test_partitions_fit_long_labels_without_cutting_columns(tmp_path: Path) -> None:
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema)
    with t.update_spec() as u:
        u.add_field("k", "identity", "k")
    long = "a-rather-long-partition-value-of-the-region-"
    for n, name in ((4000, "big"), (2000, "mid"), (1000, "small")):
        t.append(pa.table({"k": [long + name] * n, "v": pa.array(range(n), pa.int64())}))
    cat.close()
    for width in (110, 90, 70, 50, 42):
        r = run(w, "partitions", "db.t", width=width)
        assert r.exit_code == 0, r.stderr
        lines = r.stdout.splitlines()
        assert all(len(line) <= width for line in lines), (width, r.stdout)
        assert lines[1].split()[-1] == "deletes", (width, r.stdout)  # the last column is whole
        rows = [line for line in lines if " 1 " in line and "KiB" in line]
        assert len(rows) == 3, (width, r.stdout)
        if width >= 70:  # else the bars make room for the labels
            bars = [line.split()[2] for line in rows]  # rows, then the rows bar
            assert len(set(bars)) == 3, (width, r.stdout)  # 4000/2000/1000
        else:
            assert "█" not in r.stdout and all(line.split()[-1] == "-" for line in rows)


def test_partitions_with_short_labels_keep_the_header_whole(tmp_path: Path) -> None:
    """Labels shorter than the word "partition" (``p=a``) sized the column below its header,
    which folded to ``parti`` / ``tion``."""
    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("p", pa.string()), ("k", pa.int64())]))
    with t.update_spec() as u:
        u.add_field("p", "identity", "p")
    t.append(pa.table({"p": ["a", "a", "a", "b"], "k": pa.array([1, 2, 3, 4], pa.int64())}))
    cat.close()
    for width in (80, 100, 50):
        r = run(w, "partitions", "db.t", width=width)
        assert r.exit_code == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[1].split()[0] == "partition" and "tion" not in lines[2], (width, r.stdout)
        assert all(len(line) <= width for line in lines), (width, r.stdout)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_pictures_draw_with_ascii_stand_ins_where_the_terminal_lacks_their_characters(
    world: CliWorld, encoding: str
) -> None:
    """An ASCII or Latin-1 terminal: the commands drawing with ·, ●, █ or ─ failed with
    UnicodeEncodeError; machine formats stay exact (JSON escapes what is not ASCII)."""
    import os
    import subprocess

    from support.cli import PYTHON_DIR, subprocess_command

    env = {**os.environ, **world.env, "COLUMNS": "100", "NO_COLOR": "1"}
    env.update(PYTHONPATH=str(PYTHON_DIR), PYTHONIOENCODING=encoding)

    def icefloe(*args: str) -> tuple[int, str, str]:
        p = subprocess.run(
            [*subprocess_command(), *args], env=env, capture_output=True, timeout=120
        )
        return p.returncode, p.stdout.decode(encoding), p.stderr.decode(encoding)

    for command in ("snapshots", "partitions", "files", "health", "describe"):
        code, _, err = icefloe(command, "db.events")
        assert code == 0 and "UnicodeEncodeError" not in err, (command, err)
    code, out, _ = icefloe("snapshots", "db.events", "--json")
    assert code == 0 and json.loads(out)


def test_ascii_stand_ins_take_the_cells_of_the_characters_they_replace(tmp_path: Path) -> None:
    """A two-cell character (CJK, emoji) was written as a single ``?`` on an ASCII terminal,
    shifting the rest of its row left of the columns laid out for it."""
    import os
    import subprocess

    from support.cli import PYTHON_DIR, subprocess_command

    w = empty_world(tmp_path / "world")
    cat = w.catalog()
    cat.create_namespace("db")
    t = cat.create_table("db.c", pa.schema([("city", pa.string()), ("n", pa.int64())]))
    t.append(pa.table({"city": ["Zurich", "東京", "😀x"], "n": pa.array([1, 2, 3], pa.int64())}))
    cat.close()
    env = {**os.environ, **w.env, "NO_COLOR": "1", "PYTHONIOENCODING": "ascii"}
    env["PYTHONPATH"] = str(PYTHON_DIR)
    p = subprocess.run(
        [*subprocess_command(), "--width", "60", "scan", "db.c"],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    rows = [line.rstrip() for line in p.stdout.decode("ascii").splitlines()[2:] if line.strip()]
    assert rows == ["Zurich | 1", "????   | 2", "??x    | 3"]


def test_describe_into_a_pipe_keeps_each_value_on_its_line(tmp_path: Path) -> None:
    """``icefloe describe t | grep metadata`` found half a path: output into a pipe or file
    was folded at 80 columns. Without ``--width`` such output keeps each value whole; with
    it, values fold to the width asked for."""
    from click.testing import CliRunner

    from icefloe.cli.app import cli

    world = build_world(tmp_path / "world")
    location = world.catalog().load_table("db.events").metadata_location
    assert len(location) > 80
    env = {**world.env, "COLUMNS": "60"}
    out = CliRunner().invoke(cli, ["--no-color", "describe", "db.events"], env=env).stdout
    assert f"metadata        {location}\n" in out
    folded = run(world, "describe", "db.events", width=60).stdout
    assert location not in folded and location[:40] in folded.replace("\n", "")


def test_lines_of_text_into_a_pipe_keep_paths_whole(tmp_path: Path) -> None:
    """The heading lines of ``files`` and ``health`` (text, not tables) were folded at 80
    columns into a pipe or file, cutting a metadata path in two; without ``--width`` they
    stay one line each, and with it they fold as asked."""
    from click.testing import CliRunner

    from icefloe.cli.app import cli

    world = build_world(tmp_path / "world")
    location = world.catalog().load_table("db.events").metadata_location
    assert len(location) > 80
    env = {**world.env, "COLUMNS": "60"}
    for command in ("files", "health"):
        out = CliRunner().invoke(cli, ["--no-color", command, location], env=env).stdout
        assert out.splitlines()[0].startswith(f"{location} · "), (command, out)
        folded = run(world, command, location, width=60).stdout
        assert location not in folded.splitlines()[0], (command, folded)


def test_a_closed_output_pipe_stops_quietly_with_141(world: CliWorld) -> None:
    """``icefloe files t | head`` exited 1, as a failure would; a program the closed pipe
    stopped reports 141 (128 + SIGPIPE) in the shell, and nothing on standard error."""
    import os
    import subprocess

    from support.cli import PYTHON_DIR, subprocess_command

    env = {**os.environ, **world.env, "NO_COLOR": "1", "PYTHONPATH": str(PYTHON_DIR)}
    with subprocess.Popen(
        [*subprocess_command(), "files", "db.events"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as p:
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()  # before the command writes its first line
        err = p.stderr.read()
        code = p.wait(timeout=120)
    assert code == 141, err
    assert err == b""
