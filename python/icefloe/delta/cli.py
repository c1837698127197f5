"""Command line for the Delta converter: ``python -m icefloe.delta``.

::

    python -m icefloe.delta convert /data/events                       # metadata in _icefloe/
    python -m icefloe.delta convert /data/events --catalog prod --identifier db.events
    python -m icefloe.delta convert /data/events --up-to-version 42 --progress
    python -m icefloe.delta check /data/events --files

``convert`` prints one JSON line (mode, Delta version, snapshots, metadata file); ``check`` prints
each unmet IcebergCompatV3 requirement and exits 1 when there is one. Errors exit 2 with the
message on stderr. A CLI elsewhere can reuse :func:`add_convert_arguments` and
:func:`run_convert` (or :func:`main`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from icefloe.exceptions import IcebergError

__all__ = ["add_check_arguments", "add_convert_arguments", "main", "run_check", "run_convert"]


def add_convert_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``convert``."""
    p.add_argument("delta_path", help="the Delta table's location (path or URI)")
    p.add_argument("--catalog", help="an icefloe catalog name (~/.icefloe.yaml or ICEFLOE_*)")
    p.add_argument("--identifier", help="the Iceberg table in that catalog, e.g. db.events")
    p.add_argument(
        "--metadata-location",
        help="directory of a catalog-less table (default: <delta_path>/_icefloe)",
    )
    p.add_argument("--up-to-version", type=int, help="convert up to this Delta version")
    p.add_argument(
        "--dv-mode",
        choices=("puffin", "reference"),
        default="puffin",
        help="copy DVs into Puffin files (default) or point at Delta's DV files",
    )
    p.add_argument("--no-check", action="store_true", help="skip the IcebergCompatV3 check")
    p.add_argument("--progress", action="store_true", help="a progress bar on stderr")


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``check``."""
    p.add_argument("delta_path", help="the Delta table's location (path or URI)")
    p.add_argument("--version", type=int, help="check this version (default: latest)")
    p.add_argument("--files", action="store_true", help="also read every data file's footer")


def run_convert(args: argparse.Namespace) -> int:
    """Run ``convert``; returns the exit code."""
    if (args.catalog is None) != (args.identifier is None):
        print("error: --catalog and --identifier go together", file=sys.stderr)
        return 2
    catalog = None
    if args.catalog is not None:
        from icefloe.catalog import load_catalog

        catalog = load_catalog(args.catalog)
    print(json.dumps(convert_summary(args, catalog)))
    return 0


def convert_summary(args: argparse.Namespace, catalog: Any) -> dict[str, Any]:
    """Convert as the parsed ``convert`` arguments say (into ``catalog`` when given) and
    return what the command prints: the mode, Delta versions, snapshots and metadata file."""
    from icefloe.delta.convert import convert

    result = convert(
        args.delta_path,
        catalog=catalog,
        identifier=args.identifier,
        metadata_location=args.metadata_location,
        up_to_version=args.up_to_version,
        dv_mode=args.dv_mode,
        check=not args.no_check,
        progress=bool(args.progress),
    )
    return {
        "mode": result.mode,
        "delta_version": result.delta_version,
        "previous_version": result.previous_version,
        "snapshots": result.snapshots,
        "metadata_location": result.metadata_location,
    }


def run_check(args: argparse.Namespace) -> int:
    """Run ``check``; returns 0 when the table satisfies IcebergCompatV3, else 1."""
    from icefloe.delta.compat import check_iceberg_compat_v3

    report = check_iceberg_compat_v3(args.delta_path, version=args.version, files=args.files)
    if report.ok:
        print(f"{report.table} (version {report.version}) satisfies IcebergCompatV3")
        return 0
    for f in report.failures:
        print(f)
    return 1


def main(argv: Sequence[str] | None = None, prog: str = "python -m icefloe.delta") -> int:
    """Parse ``convert ...`` or ``check ...`` and run it (``icefloe convert-delta`` and
    ``icefloe check-delta`` call this too)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Read Delta Lake tables as Iceberg v3 tables.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_convert_arguments(sub.add_parser("convert", help="create or sync the Iceberg table"))
    add_check_arguments(sub.add_parser("check", help="check IcebergCompatV3"))
    args = parser.parse_args(argv)
    try:
        return run_convert(args) if args.command == "convert" else run_check(args)
    except IcebergError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
