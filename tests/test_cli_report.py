"""``icefloe report``: one self-contained HTML file, rendered by a real headless Chromium with
the network off; the charts are present and non-empty, there are no console errors and no
requests beyond the file itself. The screenshot is kept as a test artifact (its path is
printed, and copied to ``$ICEFLOE_TEST_ARTIFACTS`` when that is set)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.cli.errors import EXIT_BAD_INPUT
from support.chromium import Chromium, chromium_binary
from support.cli import run, run_process
from support.cli_tables import CliWorld, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-report") / "world")


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    binary = chromium_binary()
    if binary is None:
        pytest.skip(
            "Chromium is not installed (scripts/test.sh installs Debian's chromium package when "
            "run as root; otherwise: sudo apt-get install -y chromium)"
        )
    b = Chromium(binary)
    try:
        yield b
    finally:
        b.close()


def test_report_is_self_contained(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = run(world, "report", "db.events", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "@import" not in html and "url(" not in html
    table = world.catalog().load_table("db.events")
    assert html.count('data-mark="snapshot"') == len(table.snapshots())
    assert html.count('data-mark="partition"') == table.inspect.partitions().num_rows
    assert html.count("<tr data-check=") == 7
    assert "icefloe compact db.events" in html


def test_a_report_path_that_cannot_be_written_is_bad_input(world: CliWorld, tmp_path: Path) -> None:
    bad = tmp_path / "no" / "such" / "dir" / "report.html"
    r = run(world, "report", "db.events", "-o", str(bad))
    assert r.exit_code == EXIT_BAD_INPUT, r.stderr
    assert r.stderr.startswith(f"error: cannot write --output {bad}: "), r.stderr
    assert not bad.parent.exists()


def test_report_shows_credential_properties_as_stars(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    world.catalog().load_table("db.plain").set_properties(
        {"s3.secret-access-key": "S3-SECRET-VALUE", "rest.uri": "https://a:URL-SECRET-VALUE@h"}
    )
    out = tmp_path / "report.html"
    r = run(world, "report", "db.plain", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    html = out.read_text()
    assert "SECRET-VALUE" not in html
    assert "<tr><td><code>s3.secret-access-key</code></td><td>***</td></tr>" in html
    assert "<td>https://a:***@h</td>" in html


def test_report_renders_offline_in_chromium(
    world: CliWorld, browser: Chromium, tmp_path_factory: pytest.TempPathFactory
) -> None:
    artifacts = tmp_path_factory.mktemp("report-artifacts")
    out = artifacts / "report.html"
    r = run_process(world, "report", "db.events", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    browser.open(out.as_uri())
    charts = browser.evaluate(
        """[...document.querySelectorAll('svg.chart')].map(s => {
             const b = s.getBoundingClientRect();
             const marks = [...s.querySelectorAll('[data-mark]')];
             const drawn = marks.filter(m => {
               const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
             return {id: s.id, width: b.width, height: b.height, marks: marks.length,
                     drawn: drawn.length,
                     kinds: [...new Set(marks.map(m => m.dataset.mark))].sort()};
           })"""
    )
    by_id = {c["id"]: c for c in charts}
    assert set(by_id) == {"timeline", "histogram", "heatmap"}
    for c in charts:
        assert c["width"] > 300 and c["height"] > 50, c
        assert c["marks"] > 0, c
    table = world.catalog().load_table("db.events")
    n = len(table.snapshots())
    assert by_id["timeline"]["kinds"] == ["bar", "snapshot", "tag"]
    assert by_id["timeline"]["drawn"] >= n + 1 + 2 * n  # snapshots, a tag, non-zero bars
    assert by_id["heatmap"]["drawn"] == table.inspect.partitions().num_rows
    assert by_id["histogram"]["drawn"] >= 1
    health = browser.evaluate(
        "[...document.querySelectorAll('#health tbody tr')].map(r => r.innerText)"
    )
    assert len(health) == 7 and all(h.strip() for h in health)
    assert browser.console_errors() == []
    assert browser.requests() == [out.as_uri()]
    shot = artifacts / "report.png"
    browser.screenshot(shot)
    assert shot.stat().st_size > 20_000
    keep = os.environ.get("ICEFLOE_TEST_ARTIFACTS")  # CI: a directory it uploads
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep, "cli-report.png"))
        shutil.copy(out, Path(keep, "cli-report.html"))
    print(f"\nreport screenshot: {shot}\nreport: {out}")


def test_the_browser_check_sees_requests_and_errors(browser: Chromium, tmp_path: Path) -> None:
    """The checks above can fail: a page with an external image and a script error is caught."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><img src='http://example.invalid/x.png'>"
        "<script>console.error('boom'); undefined_function();</script></body></html>"
    )
    browser.open(page.as_uri())
    assert "http://example.invalid/x.png" in browser.requests()
    errors = browser.console_errors()
    assert any("boom" in e for e in errors)
    assert any("undefined_function" in e for e in errors)


def test_the_report_timeline_gives_each_snapshot_its_own_x() -> None:
    """150 snapshots were drawn on an axis of 141 slots: snapshots shared an x and their
    circles lay on top of each other, hiding some."""
    from collections import Counter

    from icefloe.cli.analysis import SnapshotPoint, Timeline
    from icefloe.cli.report_svg import timeline_svg

    points = tuple(
        SnapshotPoint(i + 1, i or None, 1_700_000_000_000 + i, "append", i + 1, "main",
                      1, 0, i + 1, 100, 100, 0)
        for i in range(300)
    )  # fmt: skip
    svg = timeline_svg(Timeline(points, ("main",), {"main": 300}, {}))
    xs = re.findall(r'<circle data-mark="snapshot"[^>]*cx="([\d.]+)"', svg)
    assert len(xs) >= 100 and max(Counter(xs).values()) == 1
    assert f"{300 - len(xs)} older snapshots not drawn" in svg
