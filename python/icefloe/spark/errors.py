"""Executor errors surfacing on the driver with their icefloe type and message.

Code running on executors wraps its work in :func:`executor_errors`: an icefloe error (any
:class:`~icefloe.exceptions.IcebergError`) is re-raised with its class name and message encoded
in a tag. Spark ships the worker's traceback to the driver inside its own exception
(``PythonException``, ``Py4JJavaError``, ``SparkException``); :func:`icefloe_errors` finds the
tag there and raises the original icefloe exception class with the original message, chained to
Spark's exception for the full executor traceback.

``icefloe.spark.write``, ``delete`` and ``merge`` run their Spark jobs inside
:func:`icefloe_errors`. DataFrames from ``icefloe.spark.read`` are lazy: wrap the action that
runs them (``with icefloe_errors(): df.collect()``) to get icefloe's error types.
"""

from __future__ import annotations

import base64
import contextlib
import re
from collections.abc import Iterator

from icefloe import exceptions
from icefloe.exceptions import IcebergError

__all__ = ["executor_errors", "icefloe_errors", "translate"]

_TAG = re.compile(r"ICEFLOE-ERROR<(\w+)\|([A-Za-z0-9+/=]*)>")


def _tag(e: IcebergError) -> str:
    message = base64.b64encode(str(e).encode()).decode()
    return f"ICEFLOE-ERROR<{type(e).__name__}|{message}>"


@contextlib.contextmanager
def executor_errors() -> Iterator[None]:
    """On executors: re-raise icefloe errors with their type and message tagged for the driver."""
    try:
        yield
    except IcebergError as e:
        if _TAG.search(str(e)):
            raise
        raise type(e)(f"{e} {_tag(e)}") from e


def translate(error: BaseException) -> IcebergError | None:
    """The icefloe error tagged inside a Spark exception's text, or None if there is none."""
    match = _TAG.search(str(error))
    if match is None:
        cause = getattr(error, "java_exception", None)
        match = _TAG.search(str(cause)) if cause is not None else None
    if match is None:
        return None
    cls = getattr(exceptions, match.group(1), None)
    if not (isinstance(cls, type) and issubclass(cls, IcebergError)):
        cls = IcebergError
    message = base64.b64decode(match.group(2)).decode(errors="replace")
    try:
        return cls(message)
    except TypeError:  # a subclass with a different constructor
        return IcebergError(message)


@contextlib.contextmanager
def icefloe_errors() -> Iterator[None]:
    """On the driver: turn Spark's wrapper of a tagged executor error back into the icefloe one."""
    try:
        yield
    except IcebergError:
        raise
    except Exception as e:
        original = translate(e)
        if original is None:
            raise
        raise original from e
