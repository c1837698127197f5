"""The file ``--output`` names, written whole or not at all.

The rows go to a hidden file next to it (``.NAME.<random>.tmp``, in the same directory, so the
rename stays on one file system), which replaces the named file only once every row has been
written and the file closed. A command that fails part way (a data file missing, a full disk,
Ctrl-C) removes that file: a file it would have replaced is left as it was, and no shortened
file that still reads as valid is left behind.

A name that is not a regular file (``/dev/stdout``, a named pipe) is written to directly; so is
a file with other names (hard links), and a file in a directory where no new file can be
created. A file that could not be written in place (read-only) is refused, not replaced. A
symbolic link keeps pointing where it did: the file it points to is replaced.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from typing import IO, Any

from icefloe.cli.render import open_output

__all__ = ["replaced_file"]

_TRIES = 100


def _create_beside(target: str) -> tuple[str, int] | None:
    """A new, empty temporary file in ``target``'s directory and its descriptor (created as
    ``open`` would create ``target``: mode 0666 less the umask, or ``target``'s own mode when
    it exists); None when the directory takes no new file."""
    head, name = os.path.split(target)
    for _ in range(_TRIES):
        temp = os.path.join(head, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError:
            return None
        with contextlib.suppress(OSError):
            os.chmod(fd, stat.S_IMODE(os.stat(target).st_mode))
        return temp, fd
    return None


@contextlib.contextmanager
def replaced_file(path: str, mode: str) -> Iterator[IO[Any]]:
    """``path`` opened for writing in ``mode`` (``"w"``: UTF-8 text, ``"wb"``), replaced by
    what was written only when the block ends without an error (see the module docstring);
    a path that cannot be written is bad input."""
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except OSError:
        special = False  # no file yet (or none that can be looked at): make one
    else:
        # another name's file (a hard link) is written in place, so it stays shared
        special = not stat.S_ISREG(st.st_mode) or st.st_nlink > 1
        if not special:
            # refused as writing it in place would be (a read-only file is not replaced)
            open_output(path, "ab").close()
    created = None if special else _create_beside(target)
    if created is None:
        stream = open_output(path, mode)
        with stream:
            yield stream
        return
    temp, fd = created
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as stream:
            yield stream
        try:
            os.replace(temp, target)
        except OSError as error:
            from icefloe.exceptions import ValidationError

            reason = error.strerror or type(error).__name__
            raise ValidationError(f"cannot write --output {path}: {reason}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
