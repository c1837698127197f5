"""Read-only tables opened without a catalog: from a metadata file, or from a file-system
(Hadoop-layout) table directory through its ``metadata/version-hint.text``.

``StaticTable.from_metadata("s3://b/t/metadata/00003-....metadata.json")`` opens exactly that
metadata file (plain or gzip); any file given is read as a metadata file, whatever its name.
Given a table directory (or its ``metadata`` directory) instead, the current version is found
as Iceberg Java's ``HadoopTableOperations`` finds it: the number in ``version-hint.text`` (a
bare number, or a metadata file name some writers put there), its ``v<N>.metadata.json`` /
``v<N>.gz.metadata.json`` / ``v<N>.metadata.json.gz`` file, and newer versions written after
the hint; without a usable hint, the highest ``v<N>`` in the directory.
A static table reads (scans, snapshots, schemas) like any table; changes raise
:class:`~icefloe.exceptions.UnsupportedFeatureError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from icefloe.exceptions import (
    CorruptFileError,
    FileIOError,
    NoSuchTableError,
    NotFoundError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO
from icefloe.io.errors import map_error
from icefloe.metadata import TableMetadata, TableRequirement, TableUpdate
from icefloe.table.table import Table, Transaction

if TYPE_CHECKING:
    import datetime

    from icefloe.progress import ProgressArg

__all__ = ["StaticTable", "resolve_metadata_location"]

VERSION_HINT = "version-hint.text"
_METADATA_FILE = re.compile(r"\.metadata\.json(\.gz)?$")
_HADOOP_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json(\.gz)?$")
# A URI: a scheme of two or more characters and a colon (s3://..., Hadoop's file:/...); a
# single letter is a drive letter, as FileIO takes it, so ``c:/x`` stays a relative path here.
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def _is_metadata_file(location: str) -> bool:
    return bool(_METADATA_FILE.search(location))


def _version_file(io: FileIO, meta_dir: str, version: int) -> str | None:
    for name in (f"v{version}.metadata.json", f"v{version}.gz.metadata.json"):
        if io.exists(f"{meta_dir}/{name}"):
            return f"{meta_dir}/{name}"
    gz = f"{meta_dir}/v{version}.metadata.json.gz"
    return gz if io.exists(gz) else None


def resolve_metadata_location(location: str, io: FileIO) -> str:
    """The metadata file ``location`` names: itself if it is named as one
    (``*.metadata.json``) or is a file (a metadata file under any name: ``v2.json``, an
    exported copy), else the current version of the Hadoop-layout table in that directory
    (see the module docstring)."""
    location = location.rstrip("/")
    if _is_metadata_file(location):
        return location
    meta_dir = location if location.endswith("/metadata") else f"{location}/metadata"
    if not io.is_dir(meta_dir):
        if io.exists(location):  # a file, whatever its name: read as a metadata file
            return location
        raise NoSuchTableError(f"{location} is neither a metadata file nor a table directory")
    version: int | None = None
    try:
        hint = io.new_input(f"{meta_dir}/{VERSION_HINT}").read().decode().strip()
    except (FileIOError, UnicodeDecodeError):  # advisory: a store failing to serve it lists
        hint = ""
    if _is_metadata_file(hint):
        named = f"{meta_dir}/{hint.rsplit('/', 1)[-1]}"
        if io.exists(named):
            return named
        match = _HADOOP_FILE.match(hint.rsplit("/", 1)[-1])
        version = int(match.group(1)) if match else None
    elif hint.isdigit():
        version = int(hint)
    if version is None or _version_file(io, meta_dir, version) is None:
        versions = [
            int(m.group(1))
            for name, is_dir in io.list_dir(meta_dir)
            if not is_dir and (m := _HADOOP_FILE.match(name.rsplit("/", 1)[-1]))
        ]
        if not versions:
            raise NoSuchTableError(_no_versions_message(io, meta_dir))
        version = max(versions)
    # The hint may lag behind a commit whose hint update failed: look ahead, as Java does.
    while _version_file(io, meta_dir, version + 1) is not None:
        version += 1
    found = _version_file(io, meta_dir, version)
    if found is None:  # listed a moment ago but gone now
        raise NoSuchTableError(f"{meta_dir}: version {version} disappeared while loading")
    return found


_CATALOG_FILE = re.compile(r"^(\d+)-.*\.metadata\.json(\.gz)?$")


def _no_versions_message(io: FileIO, meta_dir: str) -> str:
    """Why ``meta_dir`` names no current version; for the directory of a catalog's table
    (``NNNNN-<uuid>.metadata.json`` files), what to open instead: the newest-numbered file is
    only a guess, since a commit that failed may have left a newer one behind."""
    named = sorted(
        (int(m.group(1)), base)
        for name, is_dir in io.list_dir(meta_dir)
        if not is_dir and (m := _CATALOG_FILE.match(base := name.rsplit("/", 1)[-1]))
    )
    text = f"{meta_dir} has no usable {VERSION_HINT} and no v<N>.metadata.json files"
    if not named:
        return text
    return (
        f"{text}: it is the directory of a catalog's table, whose catalog knows its current "
        f"metadata file; open the table by its name in the catalog, or name a metadata file "
        f"(the newest-numbered one here is {meta_dir}/{named[-1][1]})"
    )


def _read_metadata(location: str, io: FileIO) -> TableMetadata:
    try:
        raw = (
            io.new_input(location).read()
            if _is_metadata_file(location)
            else _read_json(location, io)
        )
    except NotFoundError as exc:
        raise NoSuchTableError(f"metadata file {location} does not exist") from exc
    except FileIOError:
        raise
    try:
        return TableMetadata.parse(raw)
    except ValidationError as exc:
        if not _is_metadata_file(location):  # a file given as metadata that is none
            raise ValidationError(
                f"{location} is not a table metadata file (nor a table directory): {exc}"
            ) from exc
        # named as a metadata file: the file is damaged, not the caller's input
        raise CorruptFileError(f"metadata file {location}: {exc}") from exc


_GZIP_MAGIC = b"\x1f\x8b"


def _read_json(location: str, io: FileIO) -> bytes:
    """The content of ``location``, a file not named as a metadata file, once its first bytes
    show JSON (or gzip) text: a data file or any other large file given by mistake is refused
    without reading it whole."""
    with io.new_input(location).open(seekable=False) as stream:
        try:
            head = bytes(stream.read(256))
            text = head.lstrip(b" \t\r\n\xef\xbb\xbf")  # blanks, a UTF-8 byte order mark
            if not head.startswith(_GZIP_MAGIC) and text[:1] not in (b"{", b""):
                raise ValidationError(
                    f"{location} is not a table metadata file (nor a table directory): it does "
                    "not hold JSON"
                )
            data = head + bytes(stream.read())
            return data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark
        except ValidationError:
            raise
        except Exception as exc:
            raise map_error(exc, location, "read") from exc


class StaticTable(Table):
    """A read-only table loaded from a metadata file or a Hadoop-layout table directory."""

    def __init__(
        self, metadata: TableMetadata, metadata_location: str, io: FileIO, source: str
    ) -> None:
        # No catalog: every path that would commit is overridden below to raise.
        identifier = ("static-table", metadata_location)
        super().__init__(identifier, metadata, metadata_location, io, None)  # type: ignore[arg-type]
        self._source = source

    @classmethod
    def from_metadata(
        cls,
        location: str,
        io: FileIO | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> StaticTable:
        """Open the table at ``location``: a metadata file (under any name), or a table
        directory whose ``metadata/version-hint.text`` names the current version.
        ``properties`` configure the :class:`FileIO` (``s3.*``, ...) when ``io`` is not
        given."""
        io = io if io is not None else FileIO(dict(properties or {}))
        if not _URI.match(location) and not location.startswith("/"):
            # A relative local path: made absolute, as the table's own locations are (a
            # relative name would match none of them, and the table would not know its file).
            # A URI (s3://..., Hadoop's file:/...) is kept as given.
            location = os.path.abspath(location)
        resolved = resolve_metadata_location(location, io)
        return cls(_read_metadata(resolved, io), resolved, io, location)

    def __repr__(self) -> str:
        return f"StaticTable({self.metadata_location!r})"

    @property
    def name(self) -> str:
        """The metadata file's location (a static table has no catalog identifier)."""
        return self.metadata_location

    def refresh(self) -> StaticTable:
        """Re-resolve the location it was opened from (a directory may have a newer version)."""
        resolved = resolve_metadata_location(self._source, self.io)
        self.metadata = _read_metadata(resolved, self.io)
        self.metadata_location = resolved
        self.identifier = ("static-table", resolved)
        return self

    def transaction(self) -> Transaction:
        """Static tables cannot be changed."""
        raise UnsupportedFeatureError(
            f"table {self.metadata_location} was opened as a StaticTable and is read-only; "
            "load it through a catalog to change it"
        )

    def _do_commit(
        self, requirements: Iterable[TableRequirement], updates: Iterable[TableUpdate]
    ) -> None:
        raise UnsupportedFeatureError(
            f"table {self.metadata_location} was opened as a StaticTable and is read-only"
        )

    def remove_orphan_files(
        self,
        older_than: datetime.datetime | datetime.timedelta | int | None = None,
        *,
        dry_run: bool = False,
        location: str | None = None,
        max_workers: int | None = None,
        progress: ProgressArg = None,
    ) -> list[str]:
        """Only with ``dry_run`` (the files this metadata file does not reference). Deleting
        them is refused: the file opened may not be the table's current version, and every
        file a newer version added (its metadata files included) would look orphaned."""
        if not dry_run:
            raise UnsupportedFeatureError(
                f"table {self.metadata_location} was opened as a StaticTable and is read-only: "
                "it may not be the table's current version, so files only newer versions "
                "reference would look orphaned; load it through a catalog to delete orphan "
                "files (dry_run=True lists them)"
            )
        return super().remove_orphan_files(
            older_than,
            dry_run=True,
            location=location,
            max_workers=max_workers,
            progress=progress,
        )
