"""Checks and parsing of file locations, shared by every file system."""

from __future__ import annotations

import re
from urllib.parse import ParseResult, urlparse

from icefloe.exceptions import ValidationError
from icefloe.filesystems import AZURE_SCHEMES, GCS_SCHEMES, S3_SCHEMES

#: What urlparse treats specially in a path (query, fragment, characters it removes).
URL_SPECIAL = re.compile(r"[?#\t\r\n]")
#: The characters of :data:`URL_SPECIAL`, kept in a path by :func:`parse_location`.
_KEPT = "?#\t\r\n"
#: ASCII control characters: urlparse removes tab, CR and LF from a URI silently, so a location
#: holding one would be written under another key than the one recorded.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: A URI scheme (one letter is a Windows drive).
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")
#: Schemes of object stores, whose clients refuse an empty path segment (``a//b``).
_OBJECT_STORE_SCHEMES = (*S3_SCHEMES, *GCS_SCHEMES, *AZURE_SCHEMES)


def check_location(location: str) -> None:
    """Refuse a location with a scheme (``s3://``, ``file://``, ...) that holds an ASCII
    control character (tab, CR, LF, ...): URI parsers drop or reject them, so the file would
    not be where the location says. Plain local paths keep them (the file system takes them as
    given). Refuse an object-store location with an empty path segment (``s3://b/a//t``):
    pyarrow's clients cannot write below it (a local ``//`` is one ``/``); or with a ``.`` or
    ``..`` segment: icefloe's own S3 requests keep it in the key, pyarrow's drop it. A NUL
    is refused everywhere: no file system takes one."""
    if "\x00" in location:
        raise ValidationError(f"location {location!r} contains a NUL character")
    if CONTROL.search(location) and SCHEME.match(CONTROL.sub("", location)):
        raise ValidationError(
            f"location {location!r} contains a control character; use a location without one"
        )
    scheme, sep, rest = location.partition("://")
    if sep and scheme.lower() in _OBJECT_STORE_SCHEMES:
        bucket, _, path = rest.partition("/")
        path = path.rstrip("/")
        if scheme.lower() not in AZURE_SCHEMES:  # ``container@account`` is Azure's own form
            _check_bucket(scheme, bucket)
        if path.startswith("/") or "//" in path:
            raise ValidationError(
                f"location {location!r} has an empty path segment ('//'), which object stores "
                "cannot write below; use single slashes"
            )
        if any(seg in (".", "..") for seg in path.split("/")):
            raise ValidationError(
                f"location {location!r} has a '.' or '..' path segment: object stores take it "
                "as part of the key while pyarrow's clients remove it, so files written there "
                "could not be read back; use the location without it"
            )


def _check_bucket(scheme: str, bucket: str) -> None:
    """Refuse credentials in an S3 or GCS location (``s3://key:secret@bucket``: icefloe's
    clients would take them for part of the bucket name; a secret holding ``/`` ends the
    "bucket" early) and a bucket name no request can carry (non-ASCII characters, blanks).
    Bucket names hold no ``:`` or ``@``, so either means credentials or a port; the error
    never repeats the text, which may hold a secret."""
    if "@" in bucket or ":" in bucket:
        raise ValidationError(
            f"an object-store location ({scheme}://) holds credentials or a port before its bucket "
            "(user:secret@bucket), which icefloe does not read from locations; give "
            "credentials as FileIO properties (such as s3.access-key-id and "
            "s3.secret-access-key) or in the environment"
        )
    if not bucket.isascii() or any(c.isspace() for c in bucket):
        raise ValidationError(
            f"{bucket!r} is not a valid bucket name ({scheme}://): bucket names are ASCII "
            "letters, digits, dots and hyphens"
        )


def parse_location(location: str) -> ParseResult:
    """``urlparse`` of a file location, ``?`` and ``#`` taken as part of its path, as Hadoop's
    paths (Iceberg Java's file IO) take them: a location names a file, never a URL with a
    query or fragment (parsed as one, a table's files would be written somewhere else). A
    tab, CR or LF (which urlparse drops) is kept too: a listed name holding one is deleted
    by that name (:func:`check_location` refuses them in locations written to)."""
    if not URL_SPECIAL.search(location):
        return urlparse(location)
    # stand-ins urlparse leaves alone: Unicode noncharacters the location does not hold
    free = [c for c in map(chr, range(0xFDD0, 0xFDF0)) if c not in location]
    if len(free) < len(_KEPT):
        raise ValidationError(f"location {location!r} holds too many Unicode noncharacters")
    there = str.maketrans(dict(zip(_KEPT, free, strict=False)))
    back = str.maketrans(dict(zip(free, _KEPT, strict=False)))
    parsed = urlparse(location.translate(there))
    return parsed._replace(netloc=parsed.netloc.translate(back), path=parsed.path.translate(back))
