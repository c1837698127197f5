"""Optional dependencies: a feature whose extra is not installed raises
:class:`~icefloe.exceptions.MissingDependencyError` (an ``ImportError`` too) naming the extra to
install, never a bare ``ModuleNotFoundError``; the command line prints the hint and exits 1.

A missing module is simulated by ``None`` in ``sys.modules`` (``import x`` then raises
``ImportError``), so these run where every extra is installed. Also: the licence file, the
public typing of ``selected_fields``, ``dir(icefloe)``, and ``create_table`` with a schema of
the wrong type.
"""

from __future__ import annotations

import hashlib
import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import icefloe
from icefloe import exceptions
from icefloe.catalog.sql import SqlCatalog
from icefloe.cli.errors import EXIT_OTHER
from icefloe.exceptions import IcebergError, MissingDependencyError, ValidationError
from icefloe.table import Table
from support.cli import run
from support.cli_tables import CATALOG, CliWorld

ROOT = Path(__file__).resolve().parent.parent


def _hide(monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    """Make ``packages`` (and their already imported submodules) unimportable."""
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            monkeypatch.setitem(sys.modules, name, None)
    for package in packages:
        monkeypatch.setitem(sys.modules, package, None)


def _check(error: BaseException, extra: str) -> None:
    assert isinstance(error, MissingDependencyError)
    assert isinstance(error, ImportError) and isinstance(error, IcebergError)
    assert error.extra == extra
    assert str(error).endswith(f": pip install 'icefloe[{extra}]'"), str(error)


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("deps", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "w"))
    cat.create_namespace("db")
    return cat


# ------------------------------------------------------------------------- the error type


def test_the_error_is_exported_and_survives_pickling() -> None:
    assert "MissingDependencyError" in exceptions.__all__
    assert issubclass(MissingDependencyError, IcebergError)
    assert issubclass(MissingDependencyError, ImportError)
    error = MissingDependencyError.install("x needs y", "server", name="y")
    assert str(error) == "x needs y: pip install 'icefloe[server]'"
    back = pickle.loads(pickle.dumps(error))  # Spark ships driver errors between processes
    assert type(back) is MissingDependencyError
    assert (str(back), back.extra, back.name) == (str(error), "server", "y")
    with pytest.raises(ImportError):  # ``except ImportError`` still catches it
        raise error


# ------------------------------------------------------------------------- server


@pytest.mark.parametrize("missing", ["uvicorn", "starlette"])
def test_serve_without_the_server_extra(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    from icefloe import rest

    _hide(monkeypatch, missing)
    with pytest.raises(MissingDependencyError) as info:
        rest.serve(catalog, port=0)
    _check(info.value, "server")
    assert info.value.name == missing
    with pytest.raises(MissingDependencyError) as info:
        rest.start(catalog)
    _check(info.value, "server")


def test_create_app_needs_only_starlette(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe import rest

    _hide(monkeypatch, "starlette")
    with pytest.raises(MissingDependencyError) as info:
        rest.create_app(catalog)
    _check(info.value, "server")
    assert not isinstance(info.value, ValidationError)  # was ValidationError before


def test_python_m_icefloe_rest_without_uvicorn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from icefloe.rest.__main__ import main

    _hide(monkeypatch, "uvicorn")
    db = tmp_path / "c.db"
    code = main(["-p", "type=sql", "-p", f"uri=sqlite:///{db}", "-p", f"warehouse={tmp_path}"])
    assert code == 1  # not 2: the input was fine
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m icefloe.rest: icefloe's REST server needs Starlette")
    assert err.endswith("pip install 'icefloe[server]'")
    assert not db.exists()  # checked before the catalog is opened


def test_icefloe_serve_without_uvicorn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "uvicorn")
    db = tmp_path / "catalog.db"
    config = tmp_path / "icefloe.yaml"
    config.write_text(f"default-catalog: {CATALOG}\ncatalog:\n  {CATALOG}:\n    type: sql\n")
    world = CliWorld(
        tmp_path,
        {
            f"ICEFLOE_CATALOG__{CATALOG.upper()}__URI": f"sqlite:///{db}",
            f"ICEFLOE_CATALOG__{CATALOG.upper()}__WAREHOUSE": str(tmp_path / "w"),
            "ICEFLOE_CONFIG": str(config),
        },
    )
    r = run(world, "serve", "--port", "0")
    assert r.exit_code == EXIT_OTHER
    assert "pip install 'icefloe[server]'" in r.stderr
    assert "Traceback" not in r.stderr and "ModuleNotFoundError" not in r.stderr
    assert not db.exists()


# ------------------------------------------------------------------------- pandas


def test_to_pandas_without_pandas(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    from icefloe.read import scan_output

    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    scan = table.scan()
    _hide(monkeypatch, "pandas")
    with pytest.raises(MissingDependencyError) as info:
        scan.to_pandas()
    _check(info.value, "pandas")
    assert "to_pandas()" in str(info.value)
    with pytest.raises(MissingDependencyError) as info:
        scan_output.to_pandas(table.io, scan.plan_files(), scan.read_options())
    _check(info.value, "pandas")


# ------------------------------------------------------------------------- spark


def test_spark_entry_points_without_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    import icefloe.spark
    from icefloe.spark import functions, pipeline

    _hide(monkeypatch, "pyspark")
    for name in icefloe.spark.__all__:  # lazily imported names are cached once looked up
        if name != "register":
            monkeypatch.delitem(vars(icefloe.spark), name, raising=False)
    functions._bucket_udf.cache_clear()
    functions._time_udf.cache_clear()
    calls = {
        "functions.bucket": lambda: functions.bucket(16, "id"),
        "functions.days": lambda: functions.days("ts"),
        "functions.register_functions": lambda: functions.register_functions(object()),
        "register": lambda: icefloe.spark.register(object()),
        "read": lambda: icefloe.spark.read,
        "write": lambda: icefloe.spark.write,
        "merge": lambda: icefloe.spark.merge,
    }
    for what, call in calls.items():
        with pytest.raises(MissingDependencyError) as info:
            call()
        _check(info.value, "spark")
        assert "PySpark 4.1" in str(info.value), what
    problem = pipeline.environment_problem()
    assert problem is not None and "pip install 'icefloe[spark]'" in problem
    assert "requirements/dev.txt" not in problem and "pyspark==" not in problem


# ------------------------------------------------------------------------- packaging


def test_extras_are_declared() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert {"server", "spark", "pandas", "duckdb", "postgres"} <= set(extras)
    assert "pyspark[sql]>=4.1,<4.2" in extras["spark"]
    assert any(d.startswith("duckdb==1.5") for d in extras["duckdb"])
    assert project["license-files"] == ["LICENSE"]


#: SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_license_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_bytes()
    assert b"Apache License\n                           Version 2.0, January 2004" in text
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256


# ------------------------------------------------------------------------- API surface


def test_selected_fields_take_any_sequence(catalog: SqlCatalog) -> None:
    from icefloe.spark.reading import read, read_scan
    from icefloe.table.scan import TableScan

    for fn in (Table.scan, TableScan.__init__, read, read_scan):
        annotation = inspect.signature(fn).parameters["selected_fields"].annotation
        assert annotation.startswith("Sequence[str]"), (fn, annotation)
    table = catalog.create_table("db.s", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}))
    scan = table.scan(selected_fields=["s"])
    assert scan.selected_fields == ("s",)  # stored as a tuple
    assert scan.to_arrow().column_names == ["s"]
    assert table.scan(selected_fields="id").selected_fields == ("id",)
    scan, _, fields = read_scan(table, selected_fields=["id"])
    assert scan.selected_fields == ("id",) and [f.name for f in fields] == ["id"]
    assert read_scan(table, selected_fields="s")[0].selected_fields == ("s",)


def test_dir_lists_the_lazy_names_without_importing_them() -> None:
    assert {"StaticTable", "load_catalog", "exceptions", "__version__"} <= set(dir(icefloe))
    code = (
        "import sys, icefloe\n"
        "assert 'StaticTable' in dir(icefloe)\n"
        "assert 'icefloe.table' not in sys.modules\n"
        "assert icefloe.StaticTable.__name__ == 'StaticTable'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("schema", [{"id": "long"}, [("id", pa.int64())], "id long", None])
def test_create_table_refuses_other_schema_types(catalog: SqlCatalog, schema: object) -> None:
    with pytest.raises(ValidationError, match=r"icefloe\.schema\.Schema or a pyarrow\.Schema"):
        catalog.create_table("db.u", schema)  # type: ignore[arg-type]
    assert not catalog.table_exists("db.u")
