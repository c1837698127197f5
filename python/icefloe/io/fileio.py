"""The :class:`FileIO`: a location string to an :class:`~icefloe.io.files.InputFile` or
:class:`~icefloe.io.files.OutputFile`, and the listing, deletion and syncing of files, over
file systems made lazily per scheme and authority, with credentials that renew themselves."""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from icefloe import _native
from icefloe._concurrency import IO_THREADS, parallel_map
from icefloe.durable import (
    sync_files,
    sync_soon,
    sync_soon_all,
)
from icefloe.exceptions import (
    AlreadyExistsError,
    FileIOError,
    NotFoundError,
    ValidationError,
)
from icefloe.filesystems import (
    AZURE_SCHEMES,
    GCS_SCHEMES,
    HDFS_SCHEMES,
    LOCAL_SCHEMES,
    S3_ACCESS_KEY_ID,
    S3_SCHEMES,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    S3_TOKEN_EXPIRES_AT_MS,
    make_filesystem,
    redacted,
    secret_values,
    warn_unread_tls_keys,
)
from icefloe.io.errors import explain_region, map_error, remember_secrets, scrub
from icefloe.io.files import FileInfo, InputFile, OutputFile, unicode_name
from icefloe.io.locations import CONTROL, URL_SPECIAL, check_location, parse_location

if TYPE_CHECKING:
    from icefloe.s3client import S3Client

#: Temporary credentials are renewed this long before they expire.
REFRESH_MARGIN_MS = 60_000
#: Renewals of credentials that still work are at least this far apart.
RENEW_RETRY_MS = 5_000

_log = logging.getLogger(__name__)

#: Whether :meth:`FileIO.write_new_all` creates local files in Rust (POSIX systems).
_NATIVE_LOCAL_WRITES = os.name == "posix"


def _delete_checksum_sibling(path: str) -> None:
    """Delete the ``.<name>.crc`` file Hadoop's local file system (Iceberg Java, Spark) writes
    beside each file it writes, as Hadoop does when it deletes the file: without this a purged
    or expired Java-written table leaves its checksum files, and its directories, behind."""
    head, name = os.path.split(path)
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(head, f".{name}.crc"))


class FileIO:
    """Reads, writes, lists and deletes files at locations of any supported scheme.

    ``properties`` are catalog or table properties; the ``s3.*``, ``gcs.*`` and ``hdfs.*``
    keys configure the file systems. A FileIO is safe to share between threads.

    Temporary credentials (for example vended by a REST catalog for one table) carry their
    expiry in ``s3.session-token-expires-at-ms``; ``refresh_credentials`` is then called,
    :data:`REFRESH_MARGIN_MS` (a minute) before they expire, for properties that replace them.

    ``storage_credentials`` are ``(prefix, properties)`` pairs, as a REST catalog vends them
    for the storage locations of one table: a location is read and written with the
    properties of the longest prefix it starts with (overlaid on ``properties``), and with
    ``properties`` alone when none matches. ``refresh_storage_credentials`` returns the pairs
    anew when those of a prefix are about to expire. The locations under ``own_prefix`` (one
    of the prefixes, whose credentials ``properties`` already hold and ``refresh_credentials``
    renews) are served by this FileIO itself.

    A prefix whose properties hold no keys of their own (only a region, say) uses the keys of
    ``properties``, renewed with them.

    A FileIO pickles as its properties and storage credentials as they are at that moment
    (those about to expire renewed first), to ship to other processes such as Spark
    executors; the copy does not renew credentials.
    """

    def __init__(
        self,
        properties: Mapping[str, str] | None = None,
        *,
        refresh_credentials: Callable[[], Mapping[str, str]] | None = None,
        storage_credentials: Sequence[tuple[str, Mapping[str, str]]] = (),
        refresh_storage_credentials: Callable[[], Sequence[tuple[str, Mapping[str, str]]]]
        | None = None,
        own_prefix: str | None = None,
    ) -> None:
        self.properties: dict[str, str] = dict(properties or {})
        remember_secrets(secret_values(self.properties))
        warn_unread_tls_keys(self.properties)
        self._refresh_credentials = refresh_credentials
        self._renew_after_ms = 0.0
        self._filesystems: dict[tuple[str, str], pafs.FileSystem] = {}
        self._s3: S3Client | None = None
        self._s3_resolved = False
        self._lock = threading.Lock()
        self.storage_credentials: list[tuple[str, dict[str, str]]] = []
        for prefix, config in storage_credentials:
            if not prefix:
                raise ValidationError("a storage credential needs a non-empty prefix")
            self.storage_credentials.append((prefix, dict(config)))
            remember_secrets(secret_values(config))
        self._refresh_storage = refresh_storage_credentials
        # longest prefix first: the first one a location starts with is the one to use
        self._prefixes = sorted(self.storage_credentials, key=lambda pc: -len(pc[0]))
        self._routed: dict[str, FileIO] = {}
        self._own_prefix = own_prefix

    def __repr__(self) -> str:
        prefixes = [p for p, _ in self.storage_credentials]
        routed = f", storage_credentials for {prefixes!r}" if prefixes else ""
        return f"FileIO({redacted(self.properties)!r}{routed})"

    def __reduce__(self) -> tuple[Any, ...]:
        # the credentials in use now (renewed ones, not those first given), renewed first
        # when they are about to expire: the copy cannot renew them itself
        properties = self.current_properties()
        prefixes = [
            (prefix, self._routed_for(prefix, config).current_properties())
            for prefix, config in self.storage_credentials
            if prefix != self._own_prefix
        ]
        if self._own_prefix is not None:
            prefixes.append((self._own_prefix, properties))
        return (_restored_file_io, (properties, prefixes))

    def current_properties(self) -> dict[str, str]:
        """The properties in use, with credentials about to expire renewed first."""
        with self._lock:
            self._refresh_if_expiring()
            return dict(self.properties)

    def for_location(self, location: str) -> FileIO:
        """The FileIO that serves ``location``: the one of the longest storage-credential
        prefix it starts with, else this one."""
        match = next((pc for pc in self._prefixes if location.startswith(pc[0])), None)
        if match is None or match[0] == self._own_prefix:
            return self
        return self._routed_for(*match)

    def _routed_for(self, prefix: str, config: Mapping[str, str]) -> FileIO:
        """The FileIO of storage-credential ``prefix`` (made on first use)."""
        with self._lock:
            routed = self._routed.get(prefix)
            if routed is None:
                refresh: Callable[[], Mapping[str, str]] | None = None
                if not _has_keys(config):
                    # no keys of its own: this FileIO's, renewed by it (lock order: the
                    # routed FileIO's lock, then this one's; never the other way round)
                    if self._refresh_credentials is not None:
                        refresh = functools.partial(_renewed_keys, self, config)
                elif self._refresh_storage is not None:
                    refresh = functools.partial(_prefix_config, self._refresh_storage, prefix)
                routed = FileIO(
                    overlay_credentials(self.properties, config), refresh_credentials=refresh
                )
                self._routed[prefix] = routed
            return routed

    def abort_uploads(self, location: str) -> None:
        """Abort the incomplete multipart uploads of the S3 object at ``location`` (after a
        failed write); nothing elsewhere, or without a signing client. A failure to abort is
        logged, not raised: the write's own error is the one to report."""
        client = self.s3_client(location)
        if client is None:
            return
        bucket, _, key = self.resolve(location)[1].partition("/")
        try:
            client.abort_uploads(bucket, key)
        except FileIOError as exc:
            _log.warning("cannot abort the incomplete upload of %s: %s", location, exc)

    def s3_client(self, location: str) -> S3Client | None:
        """The signing client for an ``s3://`` location, or None (another scheme, or no
        credentials it can resolve: pyarrow's own chain is used then)."""
        # the scheme as urlparse finds it, for these schemes (one call per file read)
        if location.partition(":")[0].lower() not in S3_SCHEMES:
            return None
        if self._prefixes and (routed := self.for_location(location)) is not self:
            return routed.s3_client(location)
        with self._lock:
            self._refresh_if_expiring()
            if not self._s3_resolved:
                from icefloe.s3client import S3Client

                self._s3 = S3Client.from_properties(self.properties)
                self._s3_resolved = True
                if self._s3 is not None:
                    remember_secrets(self._s3.secrets())
                else:
                    _log.warning(
                        "no S3 credentials in the properties, the environment or the shared "
                        "profile: exclusive creates on S3 fall back to check-then-write"
                    )
            return self._s3

    # -- resolution ---------------------------------------------------------------------------
    def resolve(
        self, location: str, *, exact: bool = False, listed: bool = False
    ) -> tuple[pafs.FileSystem, str]:
        """The pyarrow file system and the path inside it for ``location``.

        A URI location holding a control character is refused with :class:`ValidationError`
        (URI parsers drop them, so the file would be written under another name), unless
        ``listed``: an existing file's name (another tool wrote it), taken as it is. An
        object-store location with an empty, ``.`` or ``..`` path segment is refused too
        (pyarrow's clients would read it elsewhere than icefloe's own writes it), unless
        ``exact``: for icefloe's own requests, which use the key as given (``exact`` implies
        ``listed``).
        """
        if not location:
            raise ValidationError("empty file location")
        if self._prefixes and (routed := self.for_location(location)) is not self:
            return routed.resolve(location, exact=exact, listed=listed)
        if CONTROL.search(location) and not (exact or listed):
            check_location(location)
        if location.startswith("file:///") and not URL_SPECIAL.search(location):
            # what urlparse gives for these, without its cost (one call per file read)
            return self._filesystem("", ""), os.path.abspath(location[7:])
        parsed = parse_location(location)
        scheme = parsed.scheme.lower()
        if len(scheme) == 1:  # a Windows drive letter, not a scheme
            scheme = ""
        if scheme in LOCAL_SCHEMES:
            path = parsed.path if scheme == "file" else location
            return self._filesystem("", ""), os.path.abspath(path)
        if scheme in S3_SCHEMES or scheme in GCS_SCHEMES:
            if not parsed.netloc:
                raise ValidationError(f"location {location!r} has no bucket")
            if not exact:
                _check_object_path(location, parsed.path)
            path = f"{parsed.netloc}{parsed.path}".rstrip("/")
            return self._filesystem(scheme, parsed.netloc), path
        if scheme in HDFS_SCHEMES:
            return self._filesystem(scheme, parsed.netloc), parsed.path
        if scheme in AZURE_SCHEMES:
            # <container>@<account>.<dfs|blob>.core.windows.net/<path>: the account is the
            # location's (as for Iceberg Java); adls.account-name is for <container>/<path>
            container, at, host = parsed.netloc.rpartition("@")
            if not at:
                container = host
            named = self.properties.get("adls.account-name")
            account = host.split(".", 1)[0] if at and not _is_address(host) else named
            if at and not account:
                account = host.split(".", 1)[0]
            if not container or not account:
                raise ValidationError(
                    f"location {location!r} needs the form {scheme}://<container>@<account>.../path"
                    " (or adls.account-name set)"
                )
            if not exact:
                _check_object_path(location, parsed.path)
            path = f"{container}{parsed.path}".rstrip("/")
            return self._filesystem(scheme, account), path
        raise ValidationError(f"unsupported file location scheme {scheme!r} in {location!r}")

    def _refresh_if_expiring(self) -> None:
        """Swap in fresh credentials when the current ones expire within
        :data:`REFRESH_MARGIN_MS` (lock held). If the renewal fails while the current ones are
        still valid, they are kept; once they have expired, the failure is raised as
        :class:`FileIOError`. While they are valid, renewals are :data:`RENEW_RETRY_MS` apart
        at least (not one per file access when renewing fails or gives short-lived ones)."""
        raw = self.properties.get(S3_TOKEN_EXPIRES_AT_MS)
        if self._refresh_credentials is None or raw is None:
            return
        try:
            expires_ms = int(raw)
        except ValueError:
            raise ValidationError(f"{S3_TOKEN_EXPIRES_AT_MS} is not an integer") from None
        now_ms = time.time() * 1000
        if expires_ms - REFRESH_MARGIN_MS > now_ms:
            return
        if expires_ms > now_ms and now_ms < self._renew_after_ms:
            return  # renewed (or tried to) moments ago; the current ones still work
        self._renew_after_ms = now_ms + RENEW_RETRY_MS
        try:
            fresh = dict(self._refresh_credentials())
            if not fresh:
                raise FileIOError("no credentials were vended")
        except Exception as exc:
            if expires_ms > now_ms:
                _log.warning(
                    "renewing storage credentials failed, keeping the current ones: %s", exc
                )
                return
            raise FileIOError(
                f"storage credentials expired and renewing them failed: {exc}"
            ) from exc
        self.properties = overlay_credentials(self.properties, fresh)
        remember_secrets(secret_values(self.properties))
        self._filesystems = {k: v for k, v in self._filesystems.items() if k[0] not in S3_SCHEMES}
        self._s3, self._s3_resolved = None, False

    def _filesystem(self, scheme: str, netloc: str) -> pafs.FileSystem:
        if scheme in AZURE_SCHEMES:
            key = ("azure", netloc)  # one file system per storage account
        elif scheme in S3_SCHEMES:
            # a bucket with a dot is addressed path-style (as icefloe's own S3 client does)
            key = (scheme, "." if "." in netloc else "")
        else:
            key = (scheme, netloc if scheme in HDFS_SCHEMES else "")
        with self._lock:
            self._refresh_if_expiring()
            fs = self._filesystems.get(key)
            if fs is None:
                fs = make_filesystem(scheme, netloc, self.properties)
                self._filesystems[key] = fs
            return fs

    # -- files ----------------------------------------------------------------------------------
    def new_input(self, location: str) -> InputFile:
        """A file to read."""
        return InputFile(self, location)

    def new_output(self, location: str) -> OutputFile:
        """A file to write."""
        return OutputFile(self, location)

    def local_path(self, location: str) -> str | None:
        """The path of a local file's ``location``; None for other file systems."""
        if location.startswith("file:///") and not URL_SPECIAL.search(location):
            return os.path.abspath(location[7:])  # what resolve gives, without its lock
        scheme, sep, _ = location.partition("://")
        if sep and scheme.lower() not in LOCAL_SCHEMES:
            return None
        if not sep and location.startswith("/"):
            return os.path.abspath(location)  # a plain path: what resolve gives, cheaper
        fs, path = self.resolve(location)
        return path if isinstance(fs, pafs.LocalFileSystem) else None

    def sync_soon(self, location: str) -> None:
        """Start putting a just-written file on stable storage, in the background
        (:meth:`sync` waits for it); nothing for object stores."""
        path = self.local_path(location)
        if path is not None:
            sync_soon(path)

    def sync_soon_all(self, locations: Sequence[str]) -> None:
        """:meth:`sync_soon` of many files just written, in one background job."""
        sync_soon_all([p for p in map(self.local_path, locations) if p is not None])

    def write_new_all(self, items: Sequence[tuple[str, bytes]], created: list[str]) -> None:
        """:meth:`OutputFile.write_new` of each ``(location, data)``, local files in Rust on a
        few threads (one call, no per-file Python), others in parallel. Every file is tried;
        the location of each file this call made, whole or partial, is appended to
        ``created`` (an existing file it refused is not); then the first failure is raised."""
        paths = [self.local_path(location) for location, _ in items]
        if not _NATIVE_LOCAL_WRITES or any(p is None for p in paths):
            self._write_new_each(items, created)
            return
        local = [p for p in paths if p is not None]
        data = [bytes(d) if not isinstance(d, bytes) else d for _, d in items]
        threads = max(1, min(IO_THREADS, len(items)))
        failures = _native.write_new_files_local(local, data, threads)
        first: Exception | None = None
        for (location, _), failure in zip(items, failures, strict=True):
            if failure is None:
                created.append(location)
                continue
            partial, exc = failure
            if partial:
                created.append(location)
            if first is None:
                first = map_error(exc, location, "write" if partial else "create")
        if first is not None:
            raise first

    def _write_new_each(self, items: Sequence[tuple[str, bytes]], created: list[str]) -> None:
        lock = threading.Lock()

        def put(item: tuple[str, bytes]) -> None:
            location, data = item
            try:
                self.new_output(location).write_new(data)
            except AlreadyExistsError:
                raise  # not ours
            except BaseException:
                with lock:
                    created.append(location)  # a partial file
                raise
            with lock:
                created.append(location)

        errors: list[tuple[int, BaseException]] = []

        def attempt(k: int) -> None:
            try:
                put(items[k])
            except Exception as exc:
                with lock:
                    errors.append((k, exc))

        parallel_map(attempt, range(len(items)), kind="io")
        if errors:
            raise min(errors, key=lambda e: e[0])[1]

    def sync(self, locations: Iterable[str]) -> None:
        """Put the files at ``locations``, and the directory entries that name them, on stable
        storage: a commit calls it before it references new files. Only local files need it
        (an object store's write is durable when it returns); others are skipped."""
        local = [p for p in map(self.local_path, locations) if p is not None]
        try:
            sync_files(local)
        except OSError as exc:
            name = exc.filename if isinstance(exc.filename, str) else (local or [""])[0]
            raise map_error(exc, name, "sync") from exc

    def exists(self, location: str) -> bool:
        """Whether a file exists at ``location``."""
        fs, path = self.resolve(location)
        try:
            return bool(fs.get_file_info(path).type == pafs.FileType.File)
        except Exception as exc:
            error = map_error(exc, location, "stat")
            raise explain_region(self, location, "stat", error) from exc

    def delete(self, location: str) -> None:
        """Delete the file at ``location``; :class:`NotFoundError` if there is none. A name
        holding control characters (another tool wrote it) is deleted as it is."""
        fs, path = self.resolve(location, listed=True)
        try:
            if isinstance(fs, pafs.LocalFileSystem) and unicode_name(path) != path:
                os.remove(path)  # a name listed surrogate-escaped: pyarrow cannot take it
            else:
                fs.delete_file(path)
        except Exception as exc:
            raise map_error(exc, location, "delete") from exc
        if isinstance(fs, pafs.LocalFileSystem):
            _delete_checksum_sibling(path)

    def delete_if_exists(self, location: str) -> bool:
        """Delete the file; a missing file is no error (False), any other failure raises."""
        try:
            self.delete(location)
        except NotFoundError:
            return False
        return True

    def delete_quietly(self, location: str) -> bool:
        """Delete the file if it exists; True if deleted. For clean-ups that must not hide the
        error that caused them: a missing file is no error, and a file the store fails to
        delete is logged (a warning) and left for orphan removal."""
        try:
            self.delete(location)
        except NotFoundError:
            return False
        except FileIOError as e:
            _log.warning(
                "cannot delete %s (left for orphan removal): %s", scrub(location), scrub(str(e))
            )
            return False
        return True

    def explain_missing(self, location: str, action: str, error: NotFoundError) -> NotFoundError:
        """``error``, or a clearer one when the bucket of an object-store location is missing."""
        scheme = urlparse(location).scheme.lower()
        if scheme not in S3_SCHEMES and scheme not in GCS_SCHEMES:
            return error
        fs, path = self.resolve(location)
        bucket = path.split("/", 1)[0]
        try:
            missing = fs.get_file_info(bucket).type == pafs.FileType.NotFound
        except Exception:  # the original error is the better one
            return error
        if missing:
            return NotFoundError(f"cannot {action} {location}: bucket {bucket!r} does not exist")
        return error

    def delete_files(
        self, locations: Iterable[str], on_deleted: Callable[[int], None] | None = None
    ) -> None:
        """Delete files (a missing file is not an error); ``on_deleted(n)`` reports progress.
        Locations are taken as they are: a name another tool wrote with a control character
        in it is deleted too.

        On S3 the deletes are batched, 1,000 keys per ``DeleteObjects`` request.
        """
        # one batch per client (the credentials of a storage prefix) and bucket
        batches: dict[tuple[int, str], tuple[S3Client, list[str]]] = {}
        for location in locations:
            client = self.s3_client(location)
            if client is None:
                self.delete_if_exists(location)
                if on_deleted is not None:
                    on_deleted(1)
                continue
            # the key as listed: deleting it is exact, even when pyarrow would read it elsewhere
            bucket, _, key = self.resolve(location, exact=True)[1].partition("/")
            batches.setdefault((id(client), bucket), (client, []))[1].append(key)
        for (_, bucket), (client, keys) in batches.items():
            client.delete_objects(bucket, keys, on_deleted)

    def delete_prefix(self, prefix: str) -> None:
        """Delete everything under the directory ``prefix`` (missing is not an error).

        On object stores the files listed under it are deleted (in batches on S3), then the
        empty "directory" marker objects some clients create.
        """
        fs, path = self.resolve(prefix)
        if not isinstance(fs, pafs.LocalFileSystem | pafs.HadoopFileSystem):
            self.delete_files(f.location for f in self.list_prefix(prefix))
            self._delete_markers(fs, path.rstrip("/"), prefix)
            return
        try:
            if fs.get_file_info(path).type == pafs.FileType.NotFound:
                return
            fs.delete_dir(path)
        except Exception as exc:
            raise map_error(exc, prefix, "delete") from exc

    def delete_emptied_dirs(self, files: Iterable[str], within: Iterable[str]) -> None:
        """Remove the directories that held ``files`` (deleted by now) and their parents up to
        and including the directories ``within``, each only if empty, deepest first. A
        directory none of ``files`` was in stays, empty or not: it may be another program's.
        On S3 the "directory" marker objects of such directories are deleted; elsewhere (HDFS,
        object stores without a signing client) nothing."""
        roots = {r: self.resolve(r) for r in within}
        local = {path.rstrip("/") for fs, path in roots.values() if _is_local(fs)}
        remote = {path.rstrip("/") for fs, path in roots.values() if not _is_local(fs)}
        emptied: dict[str, bool] = {}  # directory -> on the local file system
        for f in files:
            fs, path = self.resolve(f)
            on_disk = _is_local(fs)
            inside = local if on_disk else remote
            directory = posixpath.dirname(path)
            while directory not in emptied and any(
                directory == r or directory.startswith(f"{r}/") for r in inside
            ):
                emptied[directory] = on_disk
                directory = posixpath.dirname(directory)
        for directory in sorted(emptied, key=lambda d: d.count("/"), reverse=True):
            if emptied[directory]:
                with contextlib.suppress(OSError):  # a directory that is not empty stays
                    os.rmdir(directory)
        others = {d for d, on_disk in emptied.items() if not on_disk}
        if others:
            for root, (fs, _) in roots.items():
                if not _is_local(fs):
                    self._delete_empty_markers(root, others)

    def delete_empty_dirs(self, location: str) -> None:
        """Remove the directory ``location`` and the directories under it that hold no file,
        deepest first; a directory with a file anywhere below stays. On S3 the "directory"
        marker objects of such directories are deleted (never a prefix: a file written
        meanwhile stays); elsewhere (HDFS, object stores without a signing client) nothing."""
        fs, path = self.resolve(location)
        if isinstance(fs, pafs.LocalFileSystem):
            if os.path.isdir(path):
                for directory, _, _ in os.walk(path, topdown=False):
                    with contextlib.suppress(OSError):  # a directory that is not empty stays
                        os.rmdir(directory)
            return
        self._delete_empty_markers(location, None)

    def _delete_empty_markers(self, location: str, only: set[str] | None) -> None:
        """On S3, delete the markers of the empty directories under (and at) ``location``
        (of those in ``only``, when given)."""
        fs, path = self.resolve(location)
        client = self.s3_client(location)
        if client is None:
            return
        root = path.rstrip("/")
        try:
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        except Exception as exc:
            raise map_error(exc, location, "list") from exc
        files = [i.path for i in infos if i.type == pafs.FileType.File]
        dirs = [root, *(i.path for i in infos if i.type == pafs.FileType.Directory)]
        empty = [
            d
            for d in dirs
            if (only is None or d in only) and not any(f.startswith(f"{d}/") for f in files)
        ]
        bucket = root.partition("/")[0]
        keys = [f"{d.partition('/')[2]}/" for d in empty if d.partition("/")[2]]
        if keys:
            client.delete_objects(bucket, sorted(keys, reverse=True))

    def _delete_markers(self, fs: pafs.FileSystem, root: str, prefix: str) -> None:
        """Delete the directory markers left under (and at) ``root`` once its files are gone."""
        try:
            if fs.get_file_info(root).type == pafs.FileType.NotFound:
                return
            dirs = [i.path for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))]
        except Exception as exc:
            raise map_error(exc, prefix, "list") from exc
        client = self.s3_client(prefix)
        if client is not None:
            bucket, _, key = root.partition("/")
            keys = [f"{d.partition('/')[2]}/" for d in dirs] + ([f"{key}/"] if key else [])
            client.delete_objects(bucket, sorted(keys, reverse=True))
            return
        try:
            fs.delete_dir(root)
        except FileNotFoundError:
            pass  # no marker objects: nothing was left
        except Exception as exc:
            raise map_error(exc, prefix, "delete") from exc

    def is_dir(self, location: str) -> bool:
        """Whether ``location`` is a directory (on object stores: a non-empty prefix)."""
        fs, path = self.resolve(location)
        try:
            return bool(fs.get_file_info(path.rstrip("/")).type == pafs.FileType.Directory)
        except Exception as exc:
            raise map_error(exc, location, "stat") from exc

    def list_dir(self, location: str) -> list[tuple[str, bool]]:
        """``(name, is_directory)`` of the entries directly in the directory ``location``.

        An entry whose name is not UTF-8 is left out: no namespace, table or metadata file is
        named so (Iceberg's names and locations are Unicode strings)."""
        fs, path = self.resolve(location)
        root = path.rstrip("/")
        try:
            found = fs.get_file_info(root).type == pafs.FileType.Directory
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=False)) if found else []
        except Exception as exc:
            raise map_error(exc, location, "list") from exc
        if not found:
            error = self.explain_missing(location, "list", NotFoundError(location))
            if error.args[0] != location:  # the bucket itself is missing
                raise error
            return []
        entries = []
        for info in infos:
            if info.type in (pafs.FileType.Directory, pafs.FileType.File):
                try:
                    name = info.base_name
                except UnicodeDecodeError:
                    continue  # not UTF-8
                entries.append((name, info.type == pafs.FileType.Directory))
        return sorted(entries)

    def holds_directory(self, location: str) -> bool:
        """Whether the directory ``location`` holds a directory, whatever its name (one
        :meth:`list_dir` leaves out included); False when ``location`` does not exist."""
        fs, path = self.resolve(location)
        root = path.rstrip("/")
        try:
            if fs.get_file_info(root).type != pafs.FileType.Directory:
                return False
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=False))
        except Exception as exc:
            raise map_error(exc, location, "list") from exc
        return any(info.type == pafs.FileType.Directory for info in infos)

    def make_dirs(self, location: str) -> None:
        """Create the directory ``location`` and its parents (a no-op on object stores)."""
        fs, path = self.resolve(location)
        try:
            fs.create_dir(path.rstrip("/"), recursive=True)
        except Exception as exc:
            raise map_error(exc, location, "create directory") from exc

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
        """Every file under the directory ``prefix`` (recursively), as full locations.

        On a local file system a file name that is not UTF-8 is given surrogate-escaped, as
        Python's ``os`` module gives it (:meth:`delete` takes it back;
        :func:`~icefloe.io.files.unicode_name` writes it out readably); elsewhere such a file
        cannot be reached through pyarrow, and is left out with a warning. On a local file
        system, symbolic links to directories are not followed (what is listed
        may be deleted: orphan removal and purges must not reach files outside ``prefix``); a
        link to a file is listed as itself."""
        fs, path = self.resolve(prefix)
        base = prefix.rstrip("/")
        root = path.rstrip("/")
        if isinstance(fs, pafs.LocalFileSystem):
            yield from _list_local(root, base)
            return
        try:
            missing = fs.get_file_info(root).type == pafs.FileType.NotFound
            infos = [] if missing else fs.get_file_info(pafs.FileSelector(root, recursive=True))
        except Exception as exc:
            raise explain_region(self, prefix, "list", map_error(exc, prefix, "list")) from exc
        if missing:
            error = self.explain_missing(prefix, "list", NotFoundError(prefix))
            if error.args[0] != prefix:  # the bucket itself is missing
                raise error
            return
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            try:
                # only the separator after ``root``: a key may go on with an empty segment
                # (``root//x``, written by another tool), deleted by its exact key
                rel = info.path[len(root) :].removeprefix("/")
            except UnicodeDecodeError:
                _log.warning("cannot list a file under %s: its name is not UTF-8", prefix)
                continue
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else None
            yield FileInfo(f"{base}/{rel}", int(info.size), mtime)


def _list_local(root: str, base: str) -> Iterator[FileInfo]:
    """The files under local directory ``root`` named under ``base``, without following links
    to directories below it (their targets may be anywhere); nothing when it does not exist."""
    if not os.path.exists(root):
        return
    if not os.path.isdir(root):
        raise FileIOError(f"cannot list {base}: not a directory")

    def fail(exc: OSError) -> None:
        raise map_error(exc, base, "list") from exc

    for directory, _, files in os.walk(root, onerror=fail):
        rel_dir = directory[len(root) :].lstrip(os.sep).replace(os.sep, "/")
        for name in files:
            try:
                st = os.lstat(os.path.join(directory, name))
            except FileNotFoundError:
                continue  # deleted while listed
            except OSError as exc:
                raise map_error(exc, base, "list") from exc
            rel = f"{rel_dir}/{name}" if rel_dir else name
            yield FileInfo(f"{base}/{rel}", st.st_size, st.st_mtime_ns // 1_000_000)


def _check_object_path(location: str, path: str) -> None:
    """Refuse an object-store ``location`` whose ``path`` has an empty, ``.`` or ``..``
    segment (:func:`check_location`): icefloe's own requests would keep it in the key while
    pyarrow's drop it, so a file written there could not be read back."""
    if "//" in path or "/." in path:
        check_location(location)


def _has_keys(config: Mapping[str, str]) -> bool:
    return any(k in config for k in (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN))


def overlay_credentials(base: Mapping[str, str], fresh: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the credential properties ``fresh`` laid over it; a session token and its
    expiry in ``base`` belong to its keys, so they go when ``fresh`` brings other keys."""
    out = dict(base)
    if _has_keys(fresh):
        for key in (S3_SESSION_TOKEN, S3_TOKEN_EXPIRES_AT_MS):
            out.pop(key, None)
    out.update(fresh)
    return out


def _renewed_keys(owner: FileIO, config: Mapping[str, str]) -> dict[str, str]:
    """For a storage prefix without keys of its own: ``owner``'s credentials (renewed when
    about to expire) with the prefix's ``config`` over them."""
    current = owner.current_properties()
    keys = (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN, S3_TOKEN_EXPIRES_AT_MS)
    return {**{k: current[k] for k in keys if k in current}, **config}


def _prefix_config(
    refresh: Callable[[], Sequence[tuple[str, Mapping[str, str]]]], prefix: str
) -> Mapping[str, str]:
    """The renewed credentials of storage ``prefix`` (empty when it is no longer vended)."""
    return next((dict(c) for p, c in refresh() if p == prefix), {})


def _restored_file_io(
    properties: dict[str, str], storage_credentials: list[tuple[str, dict[str, str]]]
) -> FileIO:
    """A FileIO as unpickled: the same properties and storage credentials, no renewal."""
    return FileIO(properties, storage_credentials=storage_credentials)


def _is_local(fs: pafs.FileSystem) -> bool:
    return isinstance(fs, pafs.LocalFileSystem)


def _is_address(host: str) -> bool:
    """Whether a location's host is an IP address or ``localhost`` (an emulator's or a private
    endpoint's), whose first label names no storage account."""
    if host.startswith("["):  # [v6 address]:port
        name = host[1:].partition("]")[0]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name.lower() == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
