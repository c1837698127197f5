"""Orphan file removal, and the set of files a table's metadata reaches.

- :func:`remove_orphan_files` deletes files in the table's data and metadata directories that
  no metadata reaches (leftovers of failed writes), when older than a threshold, never files of
  another table nested there; ``dry_run`` only lists them.
- :func:`reachable_files` is the set of every file a table's metadata references: metadata
  files (current and logged), manifest lists, manifests, data and delete files of every kept
  snapshot, statistics and partition statistics files, and ``version-hint.text``.

Both are re-exported by :mod:`icefloe.table.maintenance`.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from icefloe._concurrency import parallel_map
from icefloe.exceptions import FileIOError, IcebergError, NotFoundError, ValidationError
from icefloe.io import FileIO, unicode_name
from icefloe.manifest import read_manifests
from icefloe.metadata import TableMetadata
from icefloe.progress import ProgressArg
from icefloe.properties import gc_enabled, redact_url
from icefloe.scan.manifests import fetch, manifest_lists
from icefloe.table._remove_files import delete_all
from icefloe.table_paths import (
    comparable_locations,
    data_location,
    metadata_location,
    same_file_locations,
)
from icefloe.values import epoch_ms
from icefloe.write.partition_names import escape_path_part

__all__ = ["DEFAULT_ORPHAN_AGE", "reachable_files", "remove_orphan_files"]

#: Manifest entry status of a file removed by the entry's snapshot.
DELETED = 2
DEFAULT_ORPHAN_AGE = timedelta(days=3)
"""Files younger than this are kept by default: a concurrent write may not have committed yet."""
#: A cutoff closer than this to now logs a warning (Java's procedure refuses one).
_RECENT = timedelta(days=1)
log = logging.getLogger("icefloe.maintenance")


def _manifest_paths(io: FileIO, metadata: TableMetadata) -> tuple[list[str], list[str]]:
    """(manifest lists, distinct manifests) of every kept snapshot."""
    lists = [s.manifest_list for s in metadata.snapshots if s.manifest_list]
    manifests: dict[str, None] = {}
    for batch in manifest_lists(io, metadata.snapshots).values():
        manifests.update(dict.fromkeys(batch.column("manifest_path").to_pylist()))
    return lists, list(manifests)


def reachable_files(
    io: FileIO,
    metadata: TableMetadata,
    metadata_file: str | None,
    *,
    content_files: bool = True,
    live_only: bool = False,
) -> pa.Array:
    """Every location the table's metadata references, as a string array (may repeat);
    without ``content_files`` the data and delete files of the manifests are left out. With
    ``live_only`` a manifest's ``DELETED`` entries are left out too: they record a removal,
    and once the snapshots that still read the file are expired nothing does (as Java's
    orphan removal reads manifests)."""
    chunks: list[pa.Array] = []
    named: list[str] = []
    if metadata_file:
        named.append(metadata_file)
    named.extend(e.metadata_file for e in metadata.metadata_log)
    named.extend(s.statistics_path for s in metadata.statistics)
    named.extend(s.statistics_path for s in metadata.partition_statistics)
    named.append(f"{metadata_location(metadata.location, metadata.properties)}/version-hint.text")
    lists, manifests = _manifest_paths(io, metadata)
    named.extend(lists)
    named.extend(manifests)
    chunks.append(pa.array(named, pa.string()))
    if not content_files:
        return chunks[0]
    # Manifests are decoded in parallel in Rust, 64 at a time to bound memory.
    for i in range(0, len(manifests), 64):
        group = manifests[i : i + 64]
        batches = read_manifests(fetch(io, group), columns=("status", "file_path"), names=group)
        for batch in batches:
            if live_only:
                batch = batch.filter(pc.not_equal(batch.column("status"), DELETED))
            chunks.append(batch.column("file_path").cast(pa.string()))
    return pa.concat_arrays(chunks)


def _threshold_ms(older_than: datetime | timedelta | int | None) -> int:
    now = int(time.time() * 1000)
    if older_than is None:
        return now - int(DEFAULT_ORPHAN_AGE.total_seconds() * 1000)
    if isinstance(older_than, timedelta):
        return now - int(older_than.total_seconds() * 1000)
    if isinstance(older_than, datetime | int) and not isinstance(older_than, bool):
        return epoch_ms(older_than, "older_than")  # a naive datetime is UTC, as everywhere
    raise ValidationError(
        f"older_than must be a datetime, a timedelta or epoch milliseconds, got {older_than!r}"
    )


def _other_table_roots(unreached: pa.Array, own_metadata_dir: str) -> list[str]:
    """Directories that hold another table: the parent of every directory outside this
    table's metadata directory holding an unreachable ``*.metadata.json`` or
    ``version-hint.text`` (a nested table such as ``db.a.b`` inside ``db.a``'s directories).
    Nothing under them is an orphan of this table."""
    marks = pc.or_(
        pc.ends_with(unreached, ".metadata.json"), pc.ends_with(unreached, "/version-hint.text")
    )
    own = comparable_locations(pa.array([own_metadata_dir.rstrip("/")]))[0].as_py()
    roots = set()
    for path in unreached.filter(marks).to_pylist():
        directory = path.rsplit("/", 1)[0]
        if comparable_locations(pa.array([directory]))[0].as_py() != own:
            roots.add(directory.rsplit("/", 1)[0])
    return sorted(roots)


#: How much of an old metadata file is read for its ``table-uuid`` (the rest when not found).
_UUID_PREFIX = 16 * 1024


def _refuse_shared_metadata_dir(
    io: FileIO, metadata: TableMetadata, orphans: list[str], own_metadata_dir: str
) -> None:
    """Refuses orphan removal when a metadata file it would delete from the table's own
    metadata directory belongs to another table (another ``table-uuid``): two tables then
    share the location (a table renamed and another created under its old name), and every
    file of the other one would count as an orphan of this one."""
    own = comparable_locations(pa.array([own_metadata_dir.rstrip("/")]))[0].as_py()
    # a name that is not UTF-8 is no table's metadata file
    named = [p for p in orphans if p.endswith(".metadata.json") and unicode_name(p) == p]
    if not named or not metadata.table_uuid:
        return
    directories = comparable_locations(pa.array([p.rsplit("/", 1)[0] for p in named]))
    candidates = [p for p, d in zip(named, directories.to_pylist(), strict=True) if d == own]

    def uuid_of(path: str) -> str | None:
        # only the uuid is needed: building the whole metadata of each old version (every
        # snapshot it lists) made this quadratic in the table's number of commits
        try:
            file = io.new_input(path)
            try:
                with file.open(seekable=False) as stream:
                    head = bytes(stream.read(_UUID_PREFIX))
            except OSError:
                head = b""  # the whole read below says what is wrong
            found, uuid = TableMetadata.parse_uuid(head, whole=False)
            return uuid if found else TableMetadata.parse_uuid(file.read())[1]
        except IcebergError:
            return None  # unreadable: no evidence of another table

    for path, other in zip(candidates, parallel_map(uuid_of, candidates), strict=True):
        if other and other != metadata.table_uuid:
            raise ValidationError(
                f"remove_orphan_files: {path} is metadata of another table (uuid "
                f"{other}) in this table's metadata directory: the two tables share "
                "their location, and the other table's files would count as orphans; nothing "
                "was deleted"
            )


def _within(location: str, directories: list[str]) -> bool:
    """Whether ``location`` is one of ``directories`` or inside one (scheme and bucket count:
    another bucket is another table's)."""

    def norm(path: str) -> str:
        return str(same_file_locations(pa.array([path.rstrip("/")]))[0].as_py())

    loc = norm(location)
    return any(loc == d or loc.startswith(d + "/") for d in map(norm, directories))


def _check_own_location(location: str, own: list[str]) -> None:
    """Refuses a ``location`` outside the table's location and its data and metadata
    directories: everything listed there that this table does not reach (other tables' files,
    a catalog's database) would count as an orphan. ``.`` and ``..`` segments are refused:
    a file system resolves them, so the prefix check cannot vouch for where they lead."""
    try:
        location.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"remove_orphan_files: location {location!r} holds a lone UTF-16 surrogate, which "
            "no file name holds"
        ) from None
    if any(seg in (".", "..") for seg in location.replace("\\", "/").split("/")):
        raise ValidationError(
            f"remove_orphan_files: location {location!r} has '.' or '..' segments; give the "
            "directory as a plain path"
        )
    if not _within(location, own):
        raise ValidationError(
            f"remove_orphan_files: location {location!r} is outside the table's directories "
            f"({', '.join(dict.fromkeys(own))}); files there may belong to other tables"
        )


def _hidden_below(root: str, locations: pa.Array, metadata: TableMetadata) -> pa.Array:
    """The ``locations`` listed under ``root`` that are hidden there, as in the reference's
    partition-aware hidden-path filter: a file or directory below ``root`` named ``.x`` or
    ``_x`` (a catalog's namespace marker, ``_SUCCESS``, a ``_temporary/`` or ``.staging/``
    directory of another engine's job) is never a table's, except the directories of
    partition fields named so (``_p=1/``). The temporary files of icefloe's writes that never
    ended are not hidden: a process killed before it renamed ``.<name>.<32 hex digits>.tmp``
    into place left them, directly in a directory that is not hidden."""
    start = len(root.rstrip("/")) + 1
    rel = pc.binary_join_element_wise("", pc.utf8_slice_codeunits(locations, start), "/")
    names = {
        n
        for spec in metadata.partition_specs
        for f in spec.fields
        if f.name.startswith(("_", "."))
        for n in (f.name, escape_path_part(f.name))
    }
    if names:
        pattern = "/(?:" + "|".join(re.escape(n) for n in sorted(names)) + ")="
        rel = pc.replace_substring_regex(rel, pattern=pattern, replacement="/p=")
    under = pc.starts_with(locations, root.rstrip("/") + "/")
    rel = pc.if_else(under, rel, pc.binary_join_element_wise("", locations, "/"))
    any_hidden = pc.match_substring_regex(rel, r"/[._]")
    leftover = pc.match_substring_regex(rel, r"^(/[^/._][^/]*)*/\.[^/]+\.[0-9a-f]{32}\.tmp$")
    return locations.filter(pc.and_(any_hidden, pc.invert(leftover)))


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _from_working_directory(location: str) -> str:
    """A relative local path joined to the working directory, its ``.`` segments dropped
    (``..`` kept, for the check that refuses it); URIs and absolute paths as given."""
    location = os.path.expanduser(location)
    if _SCHEME.match(location) or location.startswith("/"):
        return location  # (file:/x, as Java writes locations, is a URI too)
    relative = "/".join(part for part in location.split("/") if part != ".")
    return os.path.join(os.getcwd(), relative)


def _refuse_missing(io: FileIO, root: str, *, given: bool) -> None:
    """Raise :class:`NotFoundError` when ``root`` (the ``location`` given, else the table's
    location) is not a directory: nothing was listed, and "no orphan files" would hide that
    none was looked for. On object stores an empty prefix counts as missing; a store that
    cannot say leaves the empty listing as it is."""
    try:
        missing = not io.is_dir(root)
    except NotFoundError:  # the bucket itself
        missing = True
    except FileIOError:
        return
    if not missing:
        return
    where = redact_url(root)
    if given:
        raise NotFoundError(f"cannot look for orphan files: location {where} does not exist")
    raise NotFoundError(
        f"cannot look for orphan files: the table's location {where} does not exist (its "
        "files live elsewhere, or the metadata's location is wrong)"
    )


def remove_orphan_files(
    io: FileIO,
    metadata: TableMetadata,
    metadata_file: str | None,
    *,
    older_than: datetime | timedelta | int | None = None,
    dry_run: bool = False,
    location: str | None = None,
    max_workers: int | None = None,
    progress: ProgressArg = None,
    refresh: Callable[[], tuple[TableMetadata, str | None]] | None = None,
) -> list[str]:
    """Deletes (or with ``dry_run`` only lists) the files under ``location`` (default: the
    table's data and metadata directories) that the metadata does not reach and that were
    last modified before ``older_than`` (a datetime, epoch ms, or an age as a timedelta;
    default 3 days ago). ``refresh()``, when given, returns the table's current metadata and
    its file: it is called after the listing, so that files other writers committed since
    ``metadata`` was loaded are reached. A table with ``gc.enabled=false`` is refused (a dry
    run lists).

    Only the directories the table writes to are listed by default, not its whole location:
    with the default layout a table of a nested namespace (``db.a.b``) lives inside another
    table's location (``db.a``). A data or metadata directory set outside the table's location
    (``write.data.path``, ``write.metadata.path``) is not listed unless ``location`` names it:
    several tables may share it, as with Java's ``remove_orphan_files``. Files inside a
    directory that holds another table's metadata are never orphans either (see
    :func:`_other_table_roots`), nor hidden files (``.name``,
    ``_name``, or under such a directory, except partition directories).

    Returns the orphan locations, sorted. Files without a modification time are kept. A
    ``location`` that does not exist raises :class:`~icefloe.exceptions.NotFoundError`, and
    so does a table location that does not exist while it should hold the table's metadata:
    nothing could be looked for there. A table whose metadata and data paths both lie
    outside its location gets ``[]`` then. The
    deletions run in ``max_workers`` threads (default 8) and are reported to ``progress``
    (see :mod:`icefloe.progress`).
    """
    if not dry_run and not gc_enabled(metadata.properties):
        raise ValidationError(
            "cannot remove orphan files: gc.enabled is false (the table's files may be shared "
            "with other tables)"
        )
    threshold = _threshold_ms(older_than)
    if not dry_run and time.time() * 1000 - threshold < _RECENT.total_seconds() * 1000:
        log.warning(
            "remove_orphan_files with a cutoff of less than a day: files of a write still in "
            "progress would be deleted and its commit would leave the table unreadable; run it "
            "so only when no other writer is running"
        )
    if location is not None and not isinstance(location, str):
        raise ValidationError(f"location must be a string, got {location!r}")
    own_meta = metadata_location(metadata.location, metadata.properties)
    own_data = data_location(metadata.location, metadata.properties)
    if location:
        location = _from_working_directory(location)
        _check_own_location(location, [metadata.location, own_data, own_meta])
    # the default directories too: files written before write.data.path (or
    # write.metadata.path) moved stay there, live ones and orphans alike
    base = metadata.location.rstrip("/")
    defaults = (f"{base}/data", f"{base}/metadata")
    roots = (
        [location]
        if location
        else [
            d
            for d in dict.fromkeys((own_data, own_meta, *defaults))
            if _within(d, [metadata.location])
        ]
    )
    # A local file name that is not UTF-8 is listed surrogate-escaped: the arrays hold it
    # written out (no location the metadata names is such a name), the result as listed.
    listed: dict[str, int | None] = {}
    hidden: list[pa.Array] = []
    for root in roots:
        found = {f.location: f.modified_ms for f in io.list_prefix(root)}
        listed.update(found)
        names = pa.array([unicode_name(p) for p in found], pa.string())
        hidden.append(_hidden_below(root, names, metadata))
    if not listed:
        if location or _within(own_meta, [metadata.location]):
            # where the table's metadata (or the caller) says files are: nothing there
            _refuse_missing(io, location or metadata.location, given=bool(location))
        return []
    if refresh is not None:
        metadata, metadata_file = refresh()
    as_listed = list(listed)
    paths = pa.array([unicode_name(p) for p in as_listed], pa.string())
    modified = pa.array(list(listed.values()), pa.int64())
    reachable = pc.unique(
        comparable_locations(reachable_files(io, metadata, metadata_file, live_only=True))
    )
    unreached = pc.invert(pc.is_in(comparable_locations(paths), value_set=reachable))
    mask = pc.and_(unreached, pc.fill_null(pc.less(modified, threshold), False))
    mask = pc.and_(mask, pc.invert(pc.is_in(paths, value_set=pa.concat_arrays(hidden))))
    for root in _other_table_roots(paths.filter(unreached), own_meta):
        mask = pc.and_(mask, pc.invert(pc.starts_with(paths, f"{root}/")))
    orphans = sorted(as_listed[i] for i in pc.indices_nonzero(mask).to_pylist())
    _refuse_shared_metadata_dir(io, metadata, orphans, own_meta)
    if not dry_run:
        delete_all(
            io,
            orphans,
            threads=max_workers,
            progress=progress,
            what="remove_orphan_files: deleting files",
        )
    return orphans
