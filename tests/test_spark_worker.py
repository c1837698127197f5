"""icefloe.spark.worker: static zip importers on Python workers, and the Arrow settings."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.spark.worker import (
    ARROW_SETTINGS,
    PROFILE_ENV,
    configure,
    ensure_worker_python,
    prepare_worker,
    profile_scope,
    profiled,
    static_archives,
)

pytestmark = pytest.mark.spark


def _zip(path: Path, modules: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in modules.items():
            z.writestr(f"{name}.py", text)
    return path


@pytest.fixture
def clean_path() -> Iterator[None]:
    saved_path, saved_mods = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_mods:
        del sys.modules[name]
    for key in [k for k in sys.path_importer_cache if k not in saved_path]:
        sys.path_importer_cache.pop(key, None)


def test_static_archives_parses_the_path() -> None:
    sep = os.pathsep
    path = sep.join(["/a/pyspark.zip", "/b/lib", "/c/x.JAR", "", "/d/e.egg", "/e/f.py"])
    assert static_archives(path) == {"/a/pyspark.zip", "/c/x.JAR", "/d/e.egg"}
    assert static_archives("") == set()


def test_prepare_worker_freezes_only_pythonpath_archives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_path: None
) -> None:
    static = _zip(tmp_path / "static.zip", {"icf_static_a": "X = 1", "icf_static_b": "Y = 2"})
    other = _zip(tmp_path / "other.zip", {"icf_other_a": "X = 3"})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(static), str(tmp_path / "lib")]))
    sys.path[:0] = [str(static), str(other)]
    assert importlib.import_module("icf_static_a").X == 1
    assert importlib.import_module("icf_other_a").X == 3
    assert prepare_worker() == 1
    assert type(sys.path_importer_cache[str(static)]).__name__ == "_StaticZipImporter"
    assert type(sys.path_importer_cache[str(other)]) is zipimport.zipimporter
    assert prepare_worker() == 0  # already done
    # the frozen importer still imports what its archive held
    assert importlib.import_module("icf_static_b").Y == 2
    # a module added to the archives later: the static archive's directory is not re-read
    # (it cannot change on a Spark worker), the other archive's is
    with zipfile.ZipFile(static, "a") as z:
        z.writestr("icf_static_new.py", "Z = 4")
    with zipfile.ZipFile(other, "a") as z:
        z.writestr("icf_other_new.py", "Z = 5")
    importlib.invalidate_caches()
    assert importlib.import_module("icf_other_new").Z == 5
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("icf_static_new")


def test_prepare_worker_without_archives(monkeypatch: pytest.MonkeyPatch, clean_path: None) -> None:
    monkeypatch.setenv("PYTHONPATH", "")
    assert prepare_worker() == 0


def test_spark_workers_get_static_importers(spark: Any) -> None:
    # defined here so that it is pickled by value (the test module is not on the workers)
    def worker_importers(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from icefloe.spark.worker import prepare_worker, static_archives

        for _ in batches:
            pass
        prepare_worker()
        archives = static_archives()
        kinds = [
            type(f).__name__
            for f in list(sys.path_importer_cache.values())
            if isinstance(f, zipimport.zipimporter) and os.path.normpath(f.archive) in archives
        ]
        yield pa.RecordBatch.from_pydict({"kind": kinds}, schema=pa.schema([("kind", pa.string())]))

    rows = spark.range(0, 2, 1, 2).mapInArrow(worker_importers, "kind string").collect()
    kinds = [r.kind for r in rows]
    # Spark puts pyspark.zip (and py4j) on the workers' PYTHONPATH; pyspark is imported from it
    assert kinds
    assert set(kinds) == {"_StaticZipImporter"}


def test_configure_sets_the_arrow_settings(spark: Any) -> None:
    saved = {k: spark.conf.get(k) for k in ARROW_SETTINGS}
    try:
        configure(spark)
        for key, value in ARROW_SETTINGS.items():
            got = spark.conf.get(key)
            assert got in (value, f"{value}b"), (key, got)
        # results are unchanged: a round trip through mapInArrow with the settings
        df = spark.range(0, 250_000, 1, 2).selectExpr("id", "cast(id % 7 as string) AS s")
        out = df.mapInArrow(lambda it: (b for b in it), df.schema)
        assert out.agg({"id": "sum"}).collect()[0][0] == sum(range(250_000))
        assert out.count() == 250_000
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)


_VENV_LESS_JOB = """
import sys
import pyarrow as pa
from pyspark.sql import SparkSession

import icefloe.spark as ispark
from icefloe.catalog.hadoop import HadoopCatalog

warehouse = sys.argv[1]
cat = HadoopCatalog("c", warehouse=warehouse)
cat.create_namespace("db")
t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.memory", "512m")
    .getOrCreate()
)
try:
    ispark.configure(spark)
    df = (
        spark.read.format("icefloe")
        .option("catalog", "c")
        .option("catalog.type", "hadoop")
        .option("catalog.warehouse", warehouse)
        .load("db.t")
    )
    print("ROWS", sorted(r.id for r in df.collect()))
    print("WORKER", spark.sparkContext.pythonExec)
finally:
    spark.stop()
"""


def _venv_less_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a job started as ``venv/bin/python job.py`` without activating the
    virtualenv: ``python3`` on ``PATH`` is a Python without pyarrow or icefloe."""
    shim = tmp_path / "bin"
    shim.mkdir()
    fake = shim / "python3"
    fake.write_text("#!/bin/sh\necho 'not the job Python' >&2\nexit 3\n")
    fake.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")
    }
    java_dirs = [os.path.dirname(p) for p in [shutil.which("java")] if p]
    env["PATH"] = os.pathsep.join([str(shim), *java_dirs, "/usr/bin", "/bin"])
    src = str(Path(__file__).resolve().parent.parent / "python")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_workers_run_the_job_python_without_an_activated_venv(spark: Any, tmp_path: Path) -> None:
    # ``spark`` only for the skip when Java or pyspark is missing; the job is its own process
    job = tmp_path / "job.py"
    job.write_text(_VENV_LESS_JOB)
    out = subprocess.run(
        [sys.executable, str(job), str(tmp_path / "warehouse")],
        env=_venv_less_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ROWS [1, 2, 3]" in out.stdout
    assert f"WORKER {sys.executable}" in out.stdout


def test_a_chosen_worker_python_wins(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sc = spark.sparkContext
    saved = sc.pythonExec
    try:
        monkeypatch.setenv("PYSPARK_PYTHON", "/opt/chosen/python")
        assert ensure_worker_python(spark) == "/opt/chosen/python"
        assert sc.pythonExec == "/opt/chosen/python"
        monkeypatch.delenv("PYSPARK_PYTHON")
        sc.pythonExec = "python3"
        assert ensure_worker_python(spark) == sys.executable
        assert sc.pythonExec == sys.executable
    finally:
        sc.pythonExec = saved


def test_profiled_writes_a_profile_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pstats

    def work() -> Iterator[int]:
        for i in range(3):
            yield sum(range(10_000 * (i + 1)))

    monkeypatch.delenv(PROFILE_ENV, raising=False)
    assert list(profiled("read", work())) == [sum(range(10_000 * k)) for k in (1, 2, 3)]
    assert not any(tmp_path.iterdir())

    monkeypatch.setenv(PROFILE_ENV, str(tmp_path / "prof"))
    assert list(profiled("read", work())) == [sum(range(10_000 * k)) for k in (1, 2, 3)]
    with profile_scope("write"):
        sum(range(1000))
    files = sorted(p.name for p in (tmp_path / "prof").iterdir())
    assert [f.split("-")[0] for f in files] == ["read", "write"]
    stats = pstats.Stats(str(tmp_path / "prof" / files[0]))
    assert any(name == "work" for (_, _, name) in stats.stats)  # type: ignore[attr-defined]
