"""``icefloe files`` (live files with a size histogram and the small-file share) and
``icefloe partitions`` (rows, files, size and deletes per partition as bars, skew called out)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli.analysis import (
    SKEW_RATIO,
    FileStats,
    PartitionRow,
    PartitionStats,
    bracketed,
    file_stats,
    partition_labeller,
    partition_stats,
)
from icefloe.cli.app import State, json_option, pass_state
from icefloe.cli.names import display_name
from icefloe.cli.render import (
    bar,
    deletes_text,
    esc,
    human_size,
    literal,
    parse_size,
    pct,
    plural,
    printable,
)

__all__ = ["histogram_rows", "register"]

_CONTENT = {0: "data", 1: "pos-deletes", 2: "eq-deletes"}


def _kind(content: int, file_format: str | None) -> str:
    """``data``, ``dv`` (a deletion vector in a Puffin file), ``pos-deletes``, ``eq-deletes``."""
    if content == 1 and (file_format or "").upper() == "PUFFIN":
        return "dv"
    return _CONTENT.get(content, str(content))


def _relative(path: str, location: str) -> str:
    base = location.rstrip("/") + "/"
    return path[len(base) :] if path.startswith(base) else path


def _bucket_label(lo: int, hi: int | None) -> str:
    return f">= {human_size(lo)}" if hi is None else f"< {human_size(hi)}"


def histogram_rows(stats: FileStats, width: int) -> RichTable:
    """The file-size histogram as bars, small buckets in yellow."""
    t = RichTable(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 0))
    t.add_column(justify="right", no_wrap=True)
    t.add_column(no_wrap=True)
    t.add_column(justify="right", no_wrap=True)
    peak = max([n for _, _, n in stats.histogram] + [1])
    bar_w = max(10, min(50, width - 30))
    for lo, hi, n in stats.histogram:
        small = hi is not None and hi <= stats.small_threshold
        t.add_row(_bucket_label(lo, hi), bar(n, peak, bar_w, "yellow" if small else "cyan"), str(n))
    return t


def _file_json(files: Any) -> list[dict[str, Any]]:
    d = files.to_pydict()
    return [
        {
            "content": _kind(d["content"][i], d["file_format"][i]),
            "file_path": d["file_path"][i],
            "file_format": d["file_format"][i],
            "spec_id": d["spec_id"][i],
            "partition": d["partition"][i],
            "record_count": d["record_count"][i],
            "file_size_in_bytes": d["file_size_in_bytes"][i],
            "referenced_data_file": d.get("referenced_data_file", [None] * files.num_rows)[i],
        }
        for i in range(files.num_rows)
    ]


@click.command("files", short_help="Data and delete files, size histogram.")
@click.argument("table")
@click.option(
    "--snapshot", "snapshot_id", type=int, help="Files of this snapshot (default: current)."
)
@click.option("--filter", "row_filter", help="Only the files a scan with this filter reads.")
@click.option("--target-file-size", help="Target size for the small-file share (e.g. 128MiB).")
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=30,
    show_default=True,
    help="Files listed in the text output (0: all).",
)
@json_option
@pass_state
def files(
    state: State,
    table: str,
    snapshot_id: int | None,
    row_filter: str | None,
    target_file_size: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Live data and delete files of TABLE, their size histogram and the small-file share."""
    from icefloe.cli.property_defaults import invalid_properties, using_defaults, warn_defaults
    from icefloe.properties import TableProperties

    t = state.table(table)
    target = parse_size(target_file_size) if target_file_size else None
    # a value icefloe refuses (another engine's) is read as its default; the one the small-file
    # share needs is named on standard error
    invalid = invalid_properties(t.properties)
    if target is None:
        key = TableProperties.TARGET_FILE_SIZE_BYTES
        warn_defaults({k: v for k, v in invalid.items() if k == key}, t.properties)
    stats = file_stats(using_defaults(t, invalid), snapshot_id, row_filter, target)
    snap = t.metadata.snapshot_by_id(snapshot_id) if snapshot_id else t.current_snapshot()
    if as_json:
        state.out.json(
            {
                "table": display_name(t),
                "snapshot_id": snap.snapshot_id if snap else None,
                **stats.to_json(),
                "files": _file_json(stats.files),
            }
        )
        return
    console = state.out.console
    total = stats.total_data_size
    console.print(f"[bold]{esc(display_name(t))}[/] · snapshot {snap.snapshot_id if snap else '-'}")
    deletes = deletes_text(
        stats.delete_records, stats.equality_delete_keys, stats.equality_delete_files
    )
    console.print(
        f"{plural(stats.data_files, 'data file')} ({human_size(total)}, "
        f"{plural(stats.data_records, 'row')}) · {plural(stats.delete_files, 'delete file')} "
        f"({deletes})"
    )
    if not stats.data_files:
        return
    share = pct(stats.small_files, stats.data_files)
    style = "yellow" if stats.small_files >= 2 else "green"
    console.print(
        f"small files: [{style}]{stats.small_files:,} of {stats.data_files:,} ({share})[/] under "
        f"{human_size(stats.small_threshold)} (3/4 of the target file size)"
    )
    console.print()
    console.print("[bold]file sizes[/]")
    console.print(histogram_rows(stats, console.width))
    console.print()
    f = stats.files.sort_by([("content", "ascending"), ("file_size_in_bytes", "descending")])
    shown = f.num_rows if limit == 0 else min(limit, f.num_rows)
    d = f.slice(0, shown).to_pydict()
    label = partition_labeller(t.metadata)
    rows = [
        (
            _kind(d["content"][i], d["file_format"][i]),
            printable(_relative(d["file_path"][i], t.location)),
            printable(label(d["partition"][i], d["spec_id"][i])) if d["partition"][i] else "-",
            f"{d['record_count'][i]:,}",
            human_size(d["file_size_in_bytes"][i]),
        )
        for i in range(shown)
    ]
    file_w, part_w = _name_widths(rows, console.width)
    listing = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    listing.add_column("content", no_wrap=True)
    listing.add_column("file", no_wrap=True, overflow="ellipsis", max_width=file_w)
    listing.add_column("partition", no_wrap=True, overflow="ellipsis", max_width=part_w)
    listing.add_column("rows", justify="right", no_wrap=True)
    listing.add_column("size", justify="right", no_wrap=True)
    for r in rows:
        listing.add_row(*(Text(cell) for cell in r))
    console.print(listing)
    if shown < f.num_rows:
        console.print(f"[dim]({f.num_rows - shown} more files; --limit 0 lists all)[/]")


_LISTING_HEADERS = ("content", "file", "partition", "rows", "size")


def _name_widths(rows: Sequence[tuple[str, ...]], width: int) -> tuple[int, int]:
    """Widths of the file and partition columns of the listing: what the content, rows and
    size columns (always whole) and the gaps between columns leave, shared so that the file
    keeps up to half of it and a long partition label is cut rather than the numbers."""
    natural = [max([len(r[k]) for r in rows] + [len(h)]) for k, h in enumerate(_LISTING_HEADERS)]
    room = width - natural[0] - natural[3] - natural[4] - 9  # 8 for gaps, one to spare
    file_min = min(natural[1], max(12, room // 2))
    part_w = min(natural[2], max(room - file_min, len("partition")))
    # the two never take more than the room (else the numbers are cut): on a narrow terminal
    # the partition gives way down to the file's header, and both headers are cut past that
    part_w = max(1, min(part_w, room - min(len("file"), natural[1])))
    return max(1, room - part_w), part_w


def _skew_line(stats: PartitionStats) -> Text:
    top = stats.rows[0]
    label = printable(top.label)
    where = printable(bracketed(top.label))
    total = sum(r.records for r in stats.rows)
    line = Text()
    base = stats.baseline  # the median partition, or of two the other one
    if stats.skewed:
        line.append("skewed: ", style="bold yellow")
        line.append(
            f"{label} holds {pct(top.records, total)} of the rows, "
            f"{stats.skew:.1f}x {base} ({stats.baseline_records:,.0f} rows; "
            f"called out from {SKEW_RATIO:.0f}x)"
        )
    else:
        line.append("balanced: ", style="bold green")
        whose = "the other's" if len(stats.rows) == 2 else "the median's"
        line.append(
            f"the largest partition {where} has {stats.skew:.1f}x {whose} rows "
            f"(called out from {SKEW_RATIO:.0f}x)"
        )
    return line


def _partition_deletes(r: PartitionRow) -> str:
    """``rows in files`` of position deletes and DVs, and ``keys in files`` of equality deletes
    apart (keys are not rows); ``-`` without delete files."""
    parts = []
    if r.delete_files > r.equality_delete_files:
        parts.append(f"{r.delete_records:,} in {r.delete_files - r.equality_delete_files}")
    if r.equality_delete_files:
        parts.append(f"{r.equality_delete_keys:,} keys in {r.equality_delete_files}")
    return ", ".join(parts) or "-"


@click.command("partitions", short_help="Rows, files and size per partition.")
@click.argument("table")
@click.option("--snapshot", "snapshot_id", type=int, help="Partitions of this snapshot.")
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=50,
    show_default=True,
    help="Partitions drawn in the text output, largest first (0: all).",
)
@json_option
@pass_state
def partitions(
    state: State, table: str, snapshot_id: int | None, limit: int, as_json: bool
) -> None:
    """Rows, files, size and delete files per partition of TABLE, as bars."""
    t = state.table(table)
    stats = partition_stats(t, snapshot_id)
    if as_json:
        state.out.json({"table": display_name(t), **stats.to_json()})
        return
    console = state.out.console
    if not stats.rows:
        console.print(literal(f"{display_name(t)} has no live files"))
        return
    console.print(f"[bold]{esc(display_name(t))}[/] · {plural(len(stats.rows), 'partition')}")
    peak_rows = max(r.records for r in stats.rows) or 1
    peak_size = max(r.size for r in stats.rows) or 1
    skewed = stats.skewed  # a median over every partition: computed once
    shown = stats.rows if limit == 0 else stats.rows[:limit]
    cells = [
        (f"{r.records:,}", str(r.files), human_size(r.size), _partition_deletes(r)) for r in shown
    ]
    # the labels say which partition a row is and the numbers what it holds: the numbers
    # whole, the labels on one line where the terminal leaves room (the bars shrink first, to
    # two cells, and go where even that leaves labels under 12 cells), else folded
    numbers = sum(
        max(len(head), *(len(c[i]) for c in cells))
        for i, head in enumerate(("rows", "files", "size", "deletes"))
    )
    room = console.width - numbers - 13  # 7 columns: a cell of padding each, 6 separators
    bars = room - 4 >= 12
    if not bars:
        room += 4  # two columns fewer: their padding and separators
    longest = max(len(r.label) for r in shown)
    # never narrower than the header, which would fold instead
    label_w = max(len("partition"), min(longest, room - 4 if bars else room))
    bar_w = max(2, min(24, (room - label_w) // 2))
    out = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    out.add_column("partition", overflow="fold", min_width=label_w)
    out.add_column("rows", justify="right", no_wrap=True)
    if bars:
        out.add_column("", no_wrap=True, min_width=bar_w)
    out.add_column("files", justify="right", no_wrap=True)
    out.add_column("size", justify="right", no_wrap=True)
    if bars:
        out.add_column("", no_wrap=True, min_width=bar_w)
    out.add_column("deletes", justify="right", no_wrap=True)
    for r, (records, files, size, deletes) in zip(shown, cells, strict=True):
        hot = skewed and r is stats.rows[0]
        label = literal(r.label, style="bold yellow" if hot else "")
        if bars:
            row_bar = bar(r.records, peak_rows, bar_w, "yellow" if hot else "green")
            size_bar = bar(r.size, peak_size, bar_w, "blue")
            out.add_row(label, records, row_bar, files, size, size_bar, deletes)
        else:
            out.add_row(label, records, files, size, deletes)
    console.print(out)
    if len(shown) < len(stats.rows):
        more = len(stats.rows) - len(shown)
        console.print(f"[dim]({more:,} more partitions; --limit 0 draws all)[/]")
    if len(stats.rows) >= 2:
        console.print(_skew_line(stats))


def register(group: click.Group) -> None:
    """Add ``files`` and ``partitions`` to ``group``; returns None."""
    group.add_command(files)
    group.add_command(partitions)
