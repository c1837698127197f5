"""A location to read (:class:`InputFile`) or to write (:class:`OutputFile`), made by a
:class:`~icefloe.io.fileio.FileIO`, and :class:`FileInfo`, a file found by a listing."""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs

from icefloe.durable import sync_directories, sync_files, writeback_file
from icefloe.exceptions import (
    AlreadyExistsError,
    FileIOError,
    NotFoundError,
    UnknownWriteStateError,
)
from icefloe.filesystems import TokenCredentialAzureFileSystem
from icefloe.io.errors import explain_region, map_error

if TYPE_CHECKING:
    from icefloe.io.fileio import FileIO

WHOLE_READ_BYTES = 4 << 20
#: Bytes a local output stream gathers before writing them to the file.
_LOCAL_WRITE_BUFFER = 256 << 10
#: On S3, :meth:`OutputFile.write_new` sends data up to this size in one ``PUT``.
SINGLE_PUT_BYTES = 16 << 20


@dataclass(frozen=True)
class FileInfo:
    """One file found by :meth:`FileIO.list_prefix`: its full location, size and mtime (ms)."""

    location: str
    size: int
    modified_ms: int | None


def unicode_name(name: str) -> str:
    """``name`` as valid Unicode, for arrays, JSON and terminals: the bytes of a local file
    name that is not UTF-8 (which listings give surrogate-escaped, as Python's ``os`` module
    does) written out as ``\\xff``; any other name unchanged."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return name


def _make_directories(directory: str) -> list[str]:
    """Create ``directory`` and its missing parents; the directories whose entries changed
    (the parents of the created ones), for :func:`~icefloe.durable.sync_directories`."""
    created: list[str] = []
    d = directory
    while d and not os.path.isdir(d):
        created.append(d)
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    if created:
        os.makedirs(directory, exist_ok=True)
    return [os.path.dirname(c) or "." for c in created]


class InputFile:
    """A location that can be read."""

    def __init__(self, io: FileIO, location: str) -> None:
        self._io = io
        self.location = location

    def exists(self) -> bool:
        """Whether a file exists at this location."""
        return self._io.exists(self.location)

    def length(self) -> int:
        """Size of the file in bytes."""
        fs, path = self._io.resolve(self.location)
        try:
            info = fs.get_file_info(path)
        except Exception as exc:
            error = map_error(exc, self.location, "stat")
            raise explain_region(self._io, self.location, "stat", error) from exc
        if info.type != pafs.FileType.File:
            raise NotFoundError(f"cannot stat {self.location}: file not found")
        return int(info.size)

    def open(self, seekable: bool = True, size: int | None = None) -> pa.NativeFile:
        """Open the file for reading: a random-access file, or a sequential stream.

        With ``size`` (the file's length, as a manifest says it) at most 4 MiB, a file on S3 is
        fetched whole with one ``GET``, instead of a ``HEAD``, a footer read and the data reads.
        """
        fs, path = self._io.resolve(self.location)
        if isinstance(fs, pafs.LocalFileSystem):
            self._check_regular(path)
        try:
            if seekable and size is not None and size <= WHOLE_READ_BYTES:
                client = self._io.s3_client(self.location)
                if client is not None:
                    bucket, _, key = path.partition("/")
                    return pa.BufferReader(client.get_object(bucket, key))
            if isinstance(fs, TokenCredentialAzureFileSystem):
                # a token that cannot be had aborts the process in open_input_file, not here
                fs.token_checked(path)
            if seekable:
                return fs.open_input_file(path)
            return fs.open_input_stream(path)
        except Exception as exc:
            error = map_error(exc, self.location, "open")
            if isinstance(error, NotFoundError):
                error = self._io.explain_missing(self.location, "open", error)
            raise explain_region(self._io, self.location, "open", error) from exc

    def _check_regular(self, path: str) -> None:
        """A local location naming a device or a pipe (``/dev/zero``, a FIFO) is refused:
        reading one never ends, or blocks until another process writes."""
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return  # opening it reports why, as for any missing file
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise FileIOError(f"cannot open {self.location}: not a regular file")

    def read(self) -> bytes:
        """The whole content of the file."""
        with self.open(seekable=False) as stream:
            try:
                return bytes(stream.read())
            except Exception as exc:
                raise map_error(exc, self.location, "read") from exc


class OutputFile:
    """A location that can be written."""

    def __init__(self, io: FileIO, location: str) -> None:
        self._io = io
        self.location = location

    def exists(self) -> bool:
        """Whether a file already exists at this location."""
        return self._io.exists(self.location)

    def to_input_file(self) -> InputFile:
        """The same location, for reading."""
        return InputFile(self._io, self.location)

    def create(self, overwrite: bool = False) -> pa.NativeFile:
        """Open an output stream.

        With ``overwrite=False`` the call fails with :class:`AlreadyExistsError` if the file
        exists. On local file systems the check and the creation are one atomic step
        (``O_EXCL``); object stores have no exclusive create through pyarrow, so there it is a
        check followed by the write.
        """
        fs, path = self._io.resolve(self.location)
        if isinstance(fs, pafs.LocalFileSystem):
            fd = self._open_local(path, overwrite)
            # Arrow-side buffering: a Parquet writer's many small writes (page headers, pages)
            # would each be a call into Python (about a tenth of writing a small file).
            return pa.BufferedOutputStream(
                pa.PythonFile(writeback_file(fd), mode="w"), _LOCAL_WRITE_BUFFER
            )
        if not overwrite and self.exists():
            raise AlreadyExistsError(f"cannot create {self.location}: file already exists")
        try:
            return fs.open_output_stream(path)
        except Exception as exc:
            raise map_error(exc, self.location, "create") from exc

    @contextlib.contextmanager
    def writing(self, overwrite: bool = False) -> Iterator[pa.NativeFile]:
        """:meth:`create`'s stream, closed when the block ends. An I/O failure while writing
        or closing raises :class:`FileIOError` naming the location.

        A new file (``overwrite=False``) is left out when the block raises: on S3 the multipart
        upload in progress is aborted before the stream closes (closing would complete it with
        what was written so far; pyarrow's stream also leaves an upload behind, billed, when
        completing it fails), and whatever closing still wrote is deleted.

        With ``overwrite=True`` the file is replaced only by a complete new one, and a failure
        leaves the previous file as it was: a local file is written to a temporary file renamed
        over it; an object-store file is gathered in memory and uploaded when the block ends.
        """
        if overwrite:
            with self._replacing() as stream:
                yield stream
            return
        stream = self.create()
        try:
            yield stream
            stream.close()
        except Exception as exc:
            self._abandon(stream)
            self._io.delete_quietly(self.location)
            if isinstance(exc, OSError):
                raise map_error(exc, self.location, "write") from exc
            raise
        except BaseException:  # an interrupt: no requests, the stream closed as at exit
            with contextlib.suppress(Exception):
                stream.close()
            raise

    def _abandon(self, stream: pa.NativeFile) -> None:
        """Give up a failed write's stream: the S3 multipart upload in progress is aborted
        before the stream closes (closing would complete it with what was written so far) and
        again after (pyarrow's stream leaves one behind when completing it fails)."""
        self._io.abort_uploads(self.location)
        with contextlib.suppress(Exception):
            stream.close()
        self._io.abort_uploads(self.location)

    @contextlib.contextmanager
    def _replacing(self) -> Iterator[pa.NativeFile]:
        """:meth:`writing`'s stream with ``overwrite=True``: the file at the location is
        replaced once the block ends, and stays as it was if the block or the write fails."""
        fs, path = self._io.resolve(self.location)
        if not isinstance(fs, pafs.LocalFileSystem):
            buffer = pa.BufferOutputStream()
            yield buffer
            self.write(buffer.getvalue().to_pybytes(), overwrite=True)
            return
        changed, tmp = self._temporary_beside(path)
        stream = pa.BufferedOutputStream(
            pa.PythonFile(writeback_file(self._open_local(tmp, overwrite=False)), mode="w"),
            _LOCAL_WRITE_BUFFER,
        )
        try:
            yield stream
            stream.close()
            sync_files([tmp])
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                stream.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise map_error(exc, self.location, "write") from exc
            raise
        self._sync_replaced(changed)

    def _temporary_beside(self, path: str) -> tuple[list[str], str]:
        """For a local write of ``path``: the directories whose entries it changes (made now if
        missing) and a fresh temporary file name beside it."""
        directory = os.path.dirname(path) or "."
        try:
            changed = [directory, *_make_directories(directory)]
        except OSError as exc:
            raise map_error(exc, self.location, "write") from exc
        return changed, os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")

    def _sync_replaced(self, directories: list[str]) -> None:
        """Put the directories whose entries a local write changed on stable storage."""
        try:
            sync_directories(directories)
        except Exception as exc:
            raise UnknownWriteStateError(
                f"{self.location} was written but its directory could not be synced, so a "
                f"crash may still lose it: {exc}"
            ) from exc

    def _upload_replacing(self, path: str, data: bytes) -> None:
        """Replace the object-store file at ``path`` with ``data`` through pyarrow's stream. A
        failed upload changes nothing stored (an uncompleted multipart upload is not visible),
        so nothing is deleted: the previous file stays; the upload is aborted."""
        fs, _ = self._io.resolve(self.location)
        try:
            stream = fs.open_output_stream(path)
        except Exception as exc:
            raise map_error(exc, self.location, "create") from exc
        try:
            stream.write(data)
            stream.close()
        except Exception as exc:
            self._abandon(stream)
            raise map_error(exc, self.location, "write") from exc

    def _open_local(self, path: str, overwrite: bool) -> int:
        """A descriptor of the local file ``path`` opened for writing, its directories made;
        with ``overwrite=False`` creation and the check that no file exists are one step
        (``O_EXCL``)."""
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            return os.open(path, flags, 0o644)
        except Exception as exc:
            raise map_error(exc, self.location, "create") from exc

    def write_new(self, data: bytes) -> None:
        """Write ``data`` as a new file (:class:`AlreadyExistsError` if one exists), without
        waiting for stable storage: the caller starts that with :meth:`FileIO.sync_soon` and a
        commit waits for it (:meth:`FileIO.sync`), as for files written through :meth:`create`.
        """
        local = self._io.local_path(self.location)
        if local is None:
            client = self._io.s3_client(self.location)
            if client is not None and len(data) <= SINGLE_PUT_BYTES:
                # one request, instead of a check and the five of a multipart upload
                bucket, _, key = self._io.resolve(self.location)[1].partition("/")
                client.put_object(bucket, key, data, if_absent=True)
                return
            with self.writing() as stream:
                stream.write(data)
            return
        fd = self._open_local(local, overwrite=False)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        except Exception as exc:
            raise map_error(exc, self.location, "write") from exc

    def write(self, data: bytes, overwrite: bool = False) -> None:
        """Write ``data`` as the whole file.

        With ``overwrite=False`` the file appears atomically and only if no file existed: on a
        local file system the bytes go to a temporary file that is hard-linked to the target
        (``link`` fails if the target exists), so a reader never sees a partial file.
        """
        fs, path = self._io.resolve(self.location)
        if isinstance(fs, pafs.LocalFileSystem):
            changed, tmp = self._temporary_beside(path)
            try:
                with open(tmp, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                if overwrite:
                    os.replace(tmp, path)
                else:
                    os.link(tmp, path)
            except Exception as exc:
                raise map_error(exc, self.location, "write") from exc
            finally:
                # a temporary file that cannot be removed is left for orphan removal: its
                # error must neither hide the write's nor turn a finished write into a failure
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            # the new name, and any directory created for it, on stable storage too
            self._sync_replaced(changed)
            return
        client = self._io.s3_client(self.location)
        if client is not None:
            bucket, _, key = path.partition("/")
            client.put_object(bucket, key, data, if_absent=not overwrite)
            return
        if overwrite:
            self._upload_replacing(path, data)
            return
        with self.writing() as stream:
            stream.write(data)
