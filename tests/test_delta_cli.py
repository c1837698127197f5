"""``python -m icefloe.delta``: convert with progress, re-run, check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from icefloe.delta.cli import main
from support.delta import fixture


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icefloe.delta", *args], capture_output=True, text=True, timeout=120
    )


def test_convert_check_and_rerun(tmp_path: Path) -> None:
    root = fixture(
        "checkpoints" if (Path(__file__).parent / "data/delta/checkpoints").exists() else "dml",
        tmp_path,
    )
    first = run("convert", str(root), "--up-to-version", "1", "--progress")
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["mode"] == "full" and out["delta_version"] == 1
    assert "delta: reading the log" in first.stderr
    second = run("convert", str(root), "--progress")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["mode"] == "incremental"
    assert "delta: converting commits" in second.stderr
    assert json.loads(run("convert", str(root)).stdout)["mode"] == "unchanged"
    ok = run("check", str(root), "--files")
    assert ok.returncode == 0 and "satisfies IcebergCompatV3" in ok.stdout


def test_errors_exit_2_and_check_failures_exit_1(tmp_path: Path, capsys: object) -> None:
    assert main(["convert", str(tmp_path)]) == 2  # not a Delta table
    root = fixture("basic", tmp_path)
    log = root / "_delta_log" / "00000000000000000000.json"
    log.write_text(
        log.read_text()
        .replace('\\"delta.enableIcebergCompatV3\\":\\"true\\"', "")
        .replace('"delta.enableIcebergCompatV3":"true"', '"delta.enableIcebergCompatV3":"false"')
    )
    assert main(["check", str(root)]) == 1
    assert main(["convert", str(root)]) == 2
    assert main(["convert", str(root), "--catalog", "x"]) == 2


def test_icefloe_convert_delta_and_check_delta_commands(tmp_path: Path) -> None:
    """The ``icefloe`` command's ``convert-delta`` and ``check-delta`` run the same converter:
    the converted table reads back with the Delta table's rows."""
    from click.testing import CliRunner

    from icefloe.cli import cli
    from icefloe.table.static import StaticTable

    root = fixture("basic", tmp_path)
    runner = CliRunner()
    done = runner.invoke(cli, ["convert-delta", str(root)])
    assert done.exit_code == 0, done.output
    out = json.loads(done.output.strip().splitlines()[-1])
    assert out["mode"] == "full"
    table = StaticTable.from_metadata(out["metadata_location"])
    assert table.scan().to_arrow().num_rows > 0
    checked = runner.invoke(cli, ["check-delta", str(root)])
    assert checked.exit_code == 0 and "satisfies IcebergCompatV3" in checked.output
    bad = runner.invoke(cli, ["convert-delta", str(tmp_path / "missing")])
    assert bad.exit_code == 3  # not found, as for every command


def test_a_missing_delta_version_is_not_found_for_both_commands(tmp_path: Path) -> None:
    """``convert-delta --up-to-version`` and ``check-delta --version`` past the log's end both
    exit 3 (not found); the converter raised a ValidationError (exit 2) before."""
    from click.testing import CliRunner

    from icefloe.cli import cli

    root = fixture("basic", tmp_path)
    runner = CliRunner()
    for args in (
        ["convert-delta", str(root), "--up-to-version", "99"],
        ["check-delta", str(root), "--version", "99"],
    ):
        r = runner.invoke(cli, args)
        assert r.exit_code == 3, r.output
        assert "has no version 99 (latest is" in r.output


def test_the_metadata_location_of_a_file_uri_conversion_opens(tmp_path: Path) -> None:
    """A Delta table given as Hadoop's ``file:/path`` converts to a metadata location of that
    form; StaticTable and the read commands open it (it was taken for a relative path)."""
    from click.testing import CliRunner

    from icefloe.cli import cli
    from icefloe.delta import convert
    from icefloe.table.static import StaticTable

    root = fixture("basic", tmp_path)
    location = convert(f"file:{root}").metadata_location
    assert location.startswith(f"file:{root}/")
    rows = StaticTable.from_metadata(location).scan().to_arrow().num_rows
    assert rows > 0
    assert StaticTable.from_metadata(f"file:{root}/_icefloe").metadata_location == location
    done = CliRunner().invoke(cli, ["uuid", location])
    assert done.exit_code == 0, done.output
