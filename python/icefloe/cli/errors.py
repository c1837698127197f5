"""How errors leave the command: one line on standard error and an exit code per kind.

=====  ===========================================================================
code   meaning
=====  ===========================================================================
0      success
1      any other failure (I/O, corrupt file, unknown commit state, a bug)
2      bad input: usage errors, invalid values, filters that do not parse
3      not found: table, namespace, snapshot, branch or tag, file
4      conflict: already exists, namespace not empty, a concurrent commit won
130    interrupted (Ctrl-C); a changing command says whether it committed
=====  ===========================================================================
"""

from __future__ import annotations

from icefloe.exceptions import (
    AlreadyExistsError,
    CommitConflictError,
    CommitFailedError,
    IcebergError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchViewError,
    NotFoundError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
    ViewAlreadyExistsError,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CONFLICT",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OTHER",
    "EXIT_PIPE_CLOSED",
    "exit_code",
]

EXIT_OTHER = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
#: Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130
#: Exit code of a command whose reader went away (``icefloe files t | head``): 128 + SIGPIPE,
#: what shells report for a process that the closed pipe stopped.
EXIT_PIPE_CLOSED = 141

_CODES: tuple[tuple[tuple[type[BaseException], ...], int], ...] = (
    (
        (
            NoSuchTableError,
            NoSuchViewError,
            NoSuchNamespaceError,
            NoSuchSnapshotError,
            NotFoundError,
        ),
        EXIT_NOT_FOUND,
    ),
    (
        (
            TableAlreadyExistsError,
            ViewAlreadyExistsError,
            NamespaceAlreadyExistsError,
            AlreadyExistsError,
            NamespaceNotEmptyError,
            CommitConflictError,
            CommitFailedError,
        ),
        EXIT_CONFLICT,
    ),
    ((ValidationError, UnsupportedFeatureError), EXIT_BAD_INPUT),
)


def exit_code(error: BaseException) -> int:
    """The exit code for ``error`` (see the module docstring)."""
    for kinds, code in _CODES:
        if isinstance(error, kinds):
            return code
    return EXIT_OTHER


def one_line(error: BaseException) -> str:
    """``error`` as the single line printed on standard error."""
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, IcebergError):
        return f"error: {text}"
    return f"error: {type(error).__name__}: {text} (run with --debug for the traceback)"
