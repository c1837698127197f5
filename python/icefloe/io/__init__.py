"""File IO over ``pyarrow.fs``: local paths, ``file://``, ``s3://``, ``gs://``, Azure
(``abfs[s]://``, ``wasb[s]://``) and ``hdfs://``.

A :class:`FileIO` turns a location string into an :class:`InputFile` or :class:`OutputFile`.
File systems are created lazily per scheme and authority from the catalog or table properties,
which use Iceberg's property names (``s3.endpoint``, ``s3.access-key-id``,
``s3.secret-access-key``, ``s3.session-token``, ``s3.region``, ``s3.path-style-access``,
``gcs.project-id``, ``adls.account-name``, ``adls.account-key``, ``hdfs.host``...).

On S3, the writes that must be atomic (:meth:`OutputFile.write`: create-if-absent and small
replacements) and batched deletes go through :class:`~icefloe.s3client.S3Client`, which signs
its own requests, because pyarrow can send neither ``If-None-Match`` nor ``DeleteObjects`` with
``Content-MD5``.

Errors from the file system arrive as :class:`~icefloe.exceptions.NotFoundError`,
:class:`~icefloe.exceptions.AlreadyExistsError` or :class:`~icefloe.exceptions.FileIOError`,
naming the location.

A table's location rules (its metadata and data directories, metadata file names) are in
:mod:`icefloe.table_paths`.

The package's modules: :mod:`~icefloe.io.fileio` (:class:`FileIO`), :mod:`~icefloe.io.files`
(:class:`InputFile`, :class:`OutputFile`), :mod:`~icefloe.io.locations` (location checks) and
:mod:`~icefloe.io.errors` (typed errors without secrets).
"""

from icefloe.io.errors import file_io_error, is_io_failure
from icefloe.io.fileio import FileIO, overlay_credentials
from icefloe.io.files import WHOLE_READ_BYTES, FileInfo, InputFile, OutputFile, unicode_name
from icefloe.io.locations import check_location, parse_location

__all__ = [
    "WHOLE_READ_BYTES",
    "FileIO",
    "FileInfo",
    "InputFile",
    "OutputFile",
    "check_location",
    "file_io_error",
    "is_io_failure",
    "overlay_credentials",
    "parse_location",
    "unicode_name",
]
