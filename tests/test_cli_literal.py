"""Names and values from tables are shown as written: rich markup in them (``[/]``,
``[bold]x[/bold]``), emoji codes and control characters never change the output or break the
command, and ANSI escape sequences reach the terminal written out (``\\x1b``), not raw."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from support.cli import run
from support.cli_tables import CliWorld, build_world

COLUMN = "s[/]"
NAME = "db.t[red]x"
VALUES = ["[/]", "[bold]important[/bold]", "\x1b[31mRED\x1b[0m", ":thumbs_up:", "a\nb"]
WIDTH = 250


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    world = build_world(tmp_path_factory.mktemp("cli-literal") / "world")
    cat = world.catalog()
    schema = pa.schema([("id", pa.int64()), (COLUMN, pa.string())])
    t = cat.create_table("db.odd", schema, properties={"k[/]": "[/] [bold]x", "esc": "\x1b[31mred"})
    with t.update_spec() as spec:
        spec.add_field(COLUMN, "identity", "p[/]")
    rows = pa.table({"id": range(len(VALUES)), COLUMN: VALUES}, schema=schema)
    t.append(rows)
    with t.manage_snapshots() as ms:
        ms.create_tag("[/]", t.current_snapshot().snapshot_id)
        ms.create_branch("[red]b")
    t.append(rows.slice(0, 1), branch="[red]b")
    cat.create_namespace("[bold]ns")
    named = cat.create_table(NAME, pa.schema([("id", pa.int64())]))
    for i in range(3):
        named.append(pa.table({"id": pa.array([i], pa.int64())}))
    yield world


def _shown(world: CliWorld, *args: str) -> str:
    r = run(world, *args, width=WIDTH)
    assert r.exit_code == 0, (args, r.stderr)
    assert "\x1b" not in r.stdout, args
    return r.stdout


def test_scan_shows_values_and_names_as_written(world: CliWorld) -> None:
    out = _shown(world, "scan", "db.odd")
    lines = [line.split(maxsplit=1) for line in out.splitlines()]
    assert lines[0] == ["id", COLUMN]
    cells = {int(cols[0]): cols[1] for cols in lines[2:] if cols and cols[0].isdigit()}
    assert cells == {
        0: "[/]",
        1: "[bold]important[/bold]",
        2: "\\x1b[31mRED\\x1b[0m",
        3: ":thumbs_up:",
        4: "a\\nb",
    }


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # a value with control characters is quoted, with them written out
        ("files", ["p[/]=[/]", "p[/]=[bold]important[/bold]", 'p[/]="\\x1b[31mRED\\x1b[0m"']),
        ("partitions", ["p[/]=[/]", "p[/]=[bold]important[/bold]", "p[/]=:thumbs_up:"]),
        ("describe", ["k[/]", "[/] [bold]x", "\\x1b[31mred", "[/] (tag)", "[red]b (branch)"]),
        ("spec", ["p[/] = identity(s[/])"]),
        ("schema", [f"2 {COLUMN}: string"]),
        ("snapshots", ["◆[/]", "[red]b"]),
        ("health", ["db.odd"]),
    ],
)
def test_table_commands_show_names_and_values_as_written(
    world: CliWorld, command: str, expected: list[str]
) -> None:
    out = _shown(world, command, "db.odd")
    for text in expected:
        assert text in out, (command, text)


def test_listings_and_statistics_show_names_as_written(world: CliWorld) -> None:
    assert "[bold]ns" in _shown(world, "list")
    assert "[bold]ns" in _shown(world, "describe", "[bold]ns")
    assert run(world, "compute-stats", "db.odd").exit_code == 0
    assert COLUMN in _shown(world, "stats", "db.odd")


@pytest.mark.parametrize(
    "args",
    [
        ("files",),
        ("partitions",),
        ("schema",),
        ("snapshots",),
        ("health",),
        ("expire", "--dry-run"),
        ("rewrite-manifests", "--dry-run"),
        ("compact", "--dry-run"),
        ("orphans", "--dry-run"),
    ],
    ids=lambda args: args[0],
)
def test_a_table_name_is_shown_as_written(world: CliWorld, args: tuple[str, ...]) -> None:
    title = _shown(world, args[0], NAME, *args[1:]).splitlines()[0]
    assert title.startswith(NAME), title
