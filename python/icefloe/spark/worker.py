"""Per-task overhead of PySpark's Python workers, removed where it is safe.

Before every task a (reused) Python worker calls :func:`importlib.invalidate_caches`, and on
Python 3.10-3.12 each :class:`zipimport.zipimporter` on the path then re-reads its archive's
whole central directory. The worker's path holds ``pyspark.zip``, the py4j zip and Spark's
``spark-core`` jar (tens of thousands of entries), cached under several package paths, so every
task spent about 0.3 s of CPU (more than reading a 250,000-row file) re-reading archives that
cannot change while the worker lives.

:func:`prepare_worker`, called at the start of icefloe's executor functions, makes the zip
importers of the archives Spark put on the worker's ``PYTHONPATH`` (its own, installed ones)
skip that re-read, so later tasks on the same worker start without it. Importers of other
archives (``addPyFile`` uploads, user zips) keep the normal behaviour.

The steps Spark runs for a data source on the driver (look up the source, create it and its
schema, plan a read, create a writer, commit or abort a write, plan a micro-batch) run in Python
planner workers that Spark keeps and reuses too, and each step starts with the same
``invalidate_caches`` call. They run under :func:`planner_step`, which does the same there:
measured on a 10M-row ``df.write.format("icefloe")``, each step cost about 0.3 s of CPU before
icefloe's code ran, from a save to its first task and from its last task to the commit.

:data:`ARROW_SETTINGS` (applied by :func:`configure`) are the Spark SQL settings under which the
Arrow exchange with icefloe's executor functions costs least: batches of 100,000 rows instead
of 10,000, and no byte limit per batch. With the default limit (64 MiB) the JVM measures the
Arrow batch it is building after every row it adds (``ArrowWriter.sizeInBytes``), about a
third of the CPU that feeding rows to ``icefloe.spark.write`` costs; with the limit at
``Int.MaxValue`` Spark skips that check and cuts batches by row count only. Neither setting
changes results.

:func:`profiled` lets a run see where executor time goes: with the environment variable
``ICEFLOE_SPARK_PROFILE`` naming a directory (set before the Spark session starts, so that the
Python workers inherit it), each read or write task of icefloe's executor functions runs under
:mod:`cProfile` and leaves ``<kind>-<pid>-<n>.prof`` there (read with :mod:`pstats`). The time
Spark's serializer spends between batches of a read is inside the profile.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import zipimport
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = [
    "ARROW_SETTINGS",
    "PROFILE_ENV",
    "configure",
    "ensure_worker_python",
    "planner_step",
    "prepare_worker",
    "profile_scope",
    "profiled",
    "static_archives",
]

#: Environment variable naming a directory for executor profiles (see :func:`profiled`).
PROFILE_ENV = "ICEFLOE_SPARK_PROFILE"
_T = TypeVar("_T")
_PROFILES = itertools.count()

#: Spark SQL settings for cheaper Arrow exchange with Python workers (see the module docs).
ARROW_SETTINGS = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
}


def configure(spark: Any) -> None:
    """Applies :data:`ARROW_SETTINGS` to the Spark session ``spark`` (runtime SQL settings:
    they take effect for the queries run after the call) and registers the ``icefloe`` data
    source (:func:`icefloe.spark.source.register`)."""
    from icefloe.spark.source import register

    ensure_worker_python(spark)
    for key, value in ARROW_SETTINGS.items():
        spark.conf.set(key, value)
    register(spark)


#: Spark's setting naming the Python its workers run.
PYTHON_SETTING = "spark.pyspark.python"


def ensure_worker_python(spark: Any) -> str:
    """Makes the Python workers of later jobs on ``spark`` run this interpreter
    (``sys.executable``) unless the user chose one (environment variable ``PYSPARK_PYTHON`` or
    Spark setting ``spark.pyspark.python``, which then wins); returns the worker Python.

    Without it, PySpark starts workers as ``python3`` from ``PATH``: a job started as
    ``venv/bin/python job.py`` without activating the virtualenv would run its workers on
    another Python, without icefloe. Spark takes the worker Python of each job from the
    session's context when the job is defined, so the change applies to what runs after it.
    """
    sc = spark.sparkContext
    chosen = os.environ.get("PYSPARK_PYTHON") or sc.getConf().get(PYTHON_SETTING, None)
    wanted = chosen or sys.executable
    if not wanted:  # an embedded interpreter that cannot name itself
        from icefloe.exceptions import ValidationError

        raise ValidationError(
            "cannot tell which Python Spark's workers should run: set PYSPARK_PYTHON to a "
            "Python with icefloe installed"
        )
    sc.pythonExec = wanted
    return str(wanted)


class _StaticZipImporter(zipimport.zipimporter):
    """A zip importer whose archive does not change while the process lives."""

    def invalidate_caches(self) -> None:
        """Nothing to do: the archive's directory, read once, stays valid."""


def static_archives(pythonpath: str | None = None) -> set[str]:
    """The archives (``.zip``, ``.jar``, ``.egg``) named in ``pythonpath`` (default: the
    ``PYTHONPATH`` that Spark gave the worker)."""
    if pythonpath is None:
        pythonpath = os.environ.get("PYTHONPATH", "")
    out = set()
    for entry in pythonpath.split(os.pathsep):
        if entry.lower().endswith((".zip", ".jar", ".egg")):
            out.add(os.path.normpath(entry))
    return out


def prepare_worker() -> int:
    """On executors: stop the per-task directory re-reads of the static archives' zip
    importers; returns how many importers were changed by this call."""
    archives = static_archives()
    if not archives:
        return 0
    changed = 0
    for finder in list(sys.path_importer_cache.values()):
        if type(finder) is zipimport.zipimporter and os.path.normpath(finder.archive) in archives:
            finder.__class__ = _StaticZipImporter
            changed += 1
    return changed


@contextlib.contextmanager
def planner_step() -> Iterator[None]:
    """A data source step on the driver's planner worker: :func:`prepare_worker` first (for
    the worker's later steps), then the block with icefloe's errors made picklable for Spark
    (:func:`icefloe.spark.errors.executor_errors`)."""
    from icefloe.spark.errors import executor_errors

    prepare_worker()
    with executor_errors():
        yield


@contextlib.contextmanager
def profile_scope(kind: str) -> Iterator[None]:
    """Runs the block under :mod:`cProfile` when :data:`PROFILE_ENV` names a directory and
    writes the profile there at its end; else does nothing."""
    directory = os.environ.get(PROFILE_ENV)
    if not directory:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        os.makedirs(directory, exist_ok=True)
        profile.dump_stats(os.path.join(directory, f"{kind}-{os.getpid()}-{next(_PROFILES)}.prof"))


def profiled(kind: str, items: Iterable[_T]) -> Iterator[_T]:
    """``items``, produced and consumed under :func:`profile_scope` (so a read's profile
    includes what Spark does with each batch)."""
    with profile_scope(kind):
        yield from items
