"""Executor errors surfacing on the driver with their icefloe type and message.

Code running on executors wraps its work in :func:`executor_errors`: an icefloe error (any
:class:`~icefloe.exceptions.IcebergError`, wherever its class is defined) is re-raised with its
class (module and name), message and simple attributes encoded in a tag. Spark ships the
worker's traceback to the driver inside its own exception (``PythonException``,
``Py4JJavaError``, ``SparkException``); :func:`icefloe_errors` finds the tag there and raises
the original icefloe exception class with the original message and attributes, chained to
Spark's exception for the full executor traceback. Classes whose constructors take other
arguments than a message are rebuilt without calling their ``__init__``.

``icefloe.spark.write``, ``delete`` and ``merge`` run their Spark jobs inside
:func:`icefloe_errors`. DataFrames from ``icefloe.spark.read`` are lazy: wrap the action that
runs them (``with icefloe_errors(): df.collect()``) to get icefloe's error types.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import re
from collections.abc import Iterator
from typing import Any

from icefloe import exceptions
from icefloe.exceptions import IcebergError

__all__ = ["executor_errors", "icefloe_errors", "translate"]

#: ``ICEFLOE-ERROR<module.Class|message|attributes>``, message and attributes (JSON) in base64;
#: tags of older versions name a class of :mod:`icefloe.exceptions` alone, with no attributes.
_TAG = re.compile(r"ICEFLOE-ERROR<([\w.]+)\|([A-Za-z0-9+/=]*)(?:\|([A-Za-z0-9+/=]*))?>")

_SCALAR = (str, int, float, bool, type(None))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode(errors="replace")


def _attributes(e: BaseException) -> dict[str, Any]:
    """The error's own attributes that survive a trip as JSON (``maybe_sent``, ``position``,
    ``path``, ``features``...): scalars, and tuples or lists of scalars."""
    out: dict[str, Any] = {}
    for key, value in vars(e).items():
        if key.startswith("_"):
            continue
        if isinstance(value, _SCALAR):
            out[key] = value
        elif isinstance(value, tuple | list) and all(isinstance(v, _SCALAR) for v in value):
            out[key] = {"tuple": list(value)} if isinstance(value, tuple) else list(value)
    if isinstance(e, ImportError) and e.name is not None:  # not in vars(): a slot of ImportError
        out["name"] = e.name
    return out


def _tag(e: IcebergError) -> str:
    # a class defined inside a function cannot be found by name: its nearest one that can
    cls = next(c for c in type(e).__mro__ if "<" not in c.__qualname__)
    attrs = _attributes(e)
    extra = f"|{_b64(json.dumps(attrs))}" if attrs else ""
    return f"ICEFLOE-ERROR<{cls.__module__}.{cls.__qualname__}|{_b64(str(e))}{extra}>"


def _rebuild(cls: type[IcebergError], message: str) -> IcebergError:
    """An instance of ``cls`` whose message is ``message``, made without calling its
    ``__init__`` (whose parameters may be anything)."""
    error = cls.__new__(cls)
    error.args = (message,)
    if isinstance(error, ImportError):  # its str() is its msg
        error.msg = message
    return error


@contextlib.contextmanager
def executor_errors() -> Iterator[None]:
    """On executors: re-raise icefloe errors with their type and message tagged for the driver."""
    try:
        yield
    except IcebergError as e:
        if _TAG.search(str(e)):
            raise
        tagged = _rebuild(type(e), f"{e} {_tag(e)}")
        tagged.__dict__.update(vars(e))  # every attribute of the original
        if isinstance(e, ImportError) and isinstance(tagged, ImportError):
            tagged.name, tagged.path = e.name, e.path
        raise tagged from e


def _error_class(name: str) -> type[IcebergError]:
    """The icefloe error class a tag names: ``module.QualName`` (only icefloe's own modules are
    imported), or a bare name of :mod:`icefloe.exceptions` in the tags of older versions;
    :class:`IcebergError` when there is no such class."""
    found: Any = None
    if "." not in name:
        found = getattr(exceptions, name, None)
    else:
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module_name = ".".join(parts[:cut])
            if module_name != "icefloe" and not module_name.startswith("icefloe."):
                break
            try:
                found = importlib.import_module(module_name)
            except ImportError:
                continue
            for attr in parts[cut:]:
                found = getattr(found, attr, None)
            break
    if isinstance(found, type) and issubclass(found, IcebergError):
        return found
    return IcebergError


def translate(error: BaseException) -> IcebergError | None:
    """The icefloe error tagged inside a Spark exception's text, or None if there is none."""
    match = _TAG.search(str(error))
    if match is None:
        cause = getattr(error, "java_exception", None)
        match = _TAG.search(str(cause)) if cause is not None else None
    if match is None:
        return None
    cls = _error_class(match.group(1))
    message = _unb64(match.group(2))
    attrs: dict[str, Any] = {}
    if match.group(3):
        try:
            loaded = json.loads(_unb64(match.group(3)))
        except ValueError:
            loaded = {}
        if isinstance(loaded, dict):
            attrs = loaded
    error_out = _rebuild(cls, message)
    for key, value in attrs.items():
        if isinstance(value, dict) and isinstance(value.get("tuple"), list):
            value = tuple(value["tuple"])
        with contextlib.suppress(AttributeError, TypeError):  # a read-only property
            setattr(error_out, str(key), value)
    return error_out


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
