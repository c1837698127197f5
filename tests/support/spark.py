"""Spark test setup: Iceberg's Java runtime jar (fetched and verified) and one Spark session.

The jar ``org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0`` is downloaded once from
Maven Central into ``$ICEFLOE_JAR_CACHE`` (default ``~/.cache/icefloe/jars``), checked against
the ``.sha1`` Maven publishes next to it, and never committed. When it cannot be fetched, only
the tests that need Iceberg Java (fixture ``iceberg_spark``) are skipped, with the reason.

One Spark session serves the whole test run (``local[2]``, small memory, no UI, 2 shuffle
partitions); tests that need Iceberg Java get a fresh file-system ("hadoop") catalog per test,
registered on that session under a unique name, whose warehouse icefloe opens with
:class:`~icefloe.catalog.hadoop.HadoopCatalog`.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ICEBERG_VERSION = "1.12.0"
RUNTIME_ARTIFACT = "iceberg-spark-runtime-4.1_2.13"
MAVEN = os.environ.get("ICEFLOE_MAVEN_URL", "https://repo1.maven.org/maven2")


def jar_cache() -> Path:
    """Where downloaded jars are kept."""
    return Path(os.environ.get("ICEFLOE_JAR_CACHE", Path.home() / ".cache" / "icefloe" / "jars"))


def _fetch(url: str, timeout: float = 120.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        data: bytes = r.read()
        return data


def fetch_jar(group: str, artifact: str, version: str, classifier: str = "") -> Path:
    """The jar from the cache, or downloaded from Maven Central and checked against its .sha1.

    ``classifier`` selects a variant such as ``jar-with-dependencies``. Raises ``OSError`` (or
    ``ValueError`` on a checksum mismatch) when it cannot be had.
    """
    name = f"{artifact}-{version}{'-' + classifier if classifier else ''}.jar"
    dest = jar_cache() / name
    if dest.exists():
        return dest
    url = f"{MAVEN}/{group.replace('.', '/')}/{artifact}/{version}/{name}"
    want = _fetch(url + ".sha1", timeout=30).decode().split()[0].strip().lower()
    data = _fetch(url)
    got = hashlib.sha1(data).hexdigest()
    if got != want:
        raise ValueError(f"{url}: sha1 {got} does not match the published {want}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(f".part{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return dest


_JAR: tuple[Path | None, str] | None = None


def iceberg_runtime_jar() -> tuple[Path | None, str]:
    """(jar path, "") or (None, why it is unavailable); computed once per process."""
    global _JAR
    if _JAR is None:
        if os.environ.get("ICEFLOE_NO_ICEBERG_JAVA"):
            _JAR = (None, "ICEFLOE_NO_ICEBERG_JAVA is set")
        else:
            try:
                _JAR = (fetch_jar("org.apache.iceberg", RUNTIME_ARTIFACT, ICEBERG_VERSION), "")
            except (OSError, ValueError) as e:
                _JAR = (
                    None,
                    f"Iceberg's Java runtime {RUNTIME_ARTIFACT}:{ICEBERG_VERSION} could not be "
                    f"fetched from Maven Central ({e}); interop tests need it",
                )
    return _JAR


def java_problem() -> str | None:
    """Why Spark cannot run here (no pyspark or no Java), or None."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install -r requirements/dev.txt)"
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "Spark needs Java 17: install a JDK (e.g. apt-get install openjdk-17-jre-headless)"
    return None


AWS_BUNDLE = ("org.apache.iceberg", "iceberg-aws-bundle", ICEBERG_VERSION)
SQLITE_JDBC = ("org.xerial", "sqlite-jdbc", "3.54.1.0")
_OBJECT_STORE_JARS: tuple[list[Path], str] | None = None


def object_store_jars() -> tuple[list[Path], str]:
    """(jars, "") or ([], why): Iceberg's AWS bundle (``S3FileIO``) and the SQLite JDBC driver
    (Iceberg Java's JDBC catalog on the SQLite file icefloe's SQL catalog uses), which let Java
    share tables on an S3 server with icefloe; computed once per process."""
    global _OBJECT_STORE_JARS
    if _OBJECT_STORE_JARS is None:
        try:
            _OBJECT_STORE_JARS = ([fetch_jar(*AWS_BUNDLE), fetch_jar(*SQLITE_JDBC)], "")
        except (OSError, ValueError) as e:
            _OBJECT_STORE_JARS = (
                [],
                f"iceberg-aws-bundle or sqlite-jdbc could not be fetched ({e})",
            )
    return _OBJECT_STORE_JARS


#: Delta Lake 4.4.0 and the jars it needs beyond pyspark's own (see gen_delta_fixtures.py).
DELTA_JARS = (
    ("io.delta", "delta-spark_4.1_2.13", "4.4.0"),
    ("io.delta", "delta-storage", "4.4.0"),
    ("io.delta", "delta-kernel-api", "4.4.0"),
    ("io.delta", "delta-kernel-defaults", "4.4.0"),
    ("io.delta", "delta-kernel-unitycatalog", "4.4.0"),
    ("io.unitycatalog", "unitycatalog-client", "0.6.0"),
    ("io.unitycatalog", "unitycatalog-hadoop", "0.6.0"),
    ("com.fasterxml.jackson.datatype", "jackson-datatype-jdk8", "2.13.5"),
)
_DELTA_JARS: tuple[list[Path], str] | None = None


def delta_jars() -> tuple[list[Path], str]:
    """(jars, "") or ([], why): Delta Lake's jars, on the shared session's class path with its
    SQL extension and catalog, so tests can write Delta tables next to Iceberg ones."""
    global _DELTA_JARS
    if _DELTA_JARS is None:
        try:
            _DELTA_JARS = ([fetch_jar(*j) for j in DELTA_JARS], "")
        except (OSError, ValueError) as e:
            _DELTA_JARS = ([], f"Delta Lake's jars could not be fetched ({e})")
    return _DELTA_JARS


_SESSION: Any = None


def spark_session(base_dir: Path) -> Any:
    """The one Spark session of this process (created on first use)."""
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("icefloe-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.warehouse.dir", str(base_dir / "spark-warehouse"))
        .config("spark.python.worker.reuse", "true")
    )
    jar, _ = iceberg_runtime_jar()
    if jar is not None:
        delta = delta_jars()[0]
        extras = [*object_store_jars()[0], *delta]
        jars = [str(jar), *(str(extra) for extra in extras)]
        extensions = ["org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"]
        if delta:  # Delta's writes need its extension and catalog (other tables pass through)
            extensions.append("io.delta.sql.DeltaSparkSessionExtension")
            builder = builder.config(
                "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
            )
        builder = builder.config("spark.jars", ",".join(jars)).config(
            "spark.sql.extensions", ",".join(extensions)
        )
    _SESSION = builder.getOrCreate()
    _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared Spark session (skips when pyspark or Java is missing)."""
    problem = java_problem()
    if problem:
        pytest.skip(problem)
    session = spark_session(tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()


_CATALOG_IDS = itertools.count()


@dataclass
class JavaCatalog:
    """A file-system catalog seen by both Iceberg Java (as ``name``) and icefloe."""

    spark: Any
    name: str
    warehouse: Path

    def icefloe(self) -> Any:
        """The same warehouse as an icefloe :class:`HadoopCatalog`."""
        from icefloe.catalog.hadoop import HadoopCatalog

        return HadoopCatalog(self.name, warehouse=str(self.warehouse))

    def sql(self, text: str) -> Any:
        """Runs Spark SQL (``{c}`` stands for this catalog's name)."""
        return self.spark.sql(text.replace("{c}", self.name))


def java_catalog(spark: Any, base: Path) -> JavaCatalog:
    """A new Iceberg Java file-system catalog on ``spark`` with its warehouse under ``base``
    (skips when the Iceberg runtime jar is unavailable)."""
    jar, why = iceberg_runtime_jar()
    if jar is None:
        pytest.skip(why)
    name = f"ice{next(_CATALOG_IDS)}"
    warehouse = base / "warehouse"
    warehouse.mkdir(parents=True)
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "hadoop")
    spark.conf.set(f"{prefix}.warehouse", str(warehouse))
    spark.conf.set(f"{prefix}.cache-enabled", "false")
    return JavaCatalog(spark, name, warehouse)


@pytest.fixture
def iceberg_spark(spark: Any, tmp_path: Path) -> JavaCatalog:
    """A fresh Iceberg Java file-system catalog on the shared session (skips without the jar)."""
    return java_catalog(spark, tmp_path)


@pytest.fixture(scope="module")
def iceberg_spark_module(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> JavaCatalog:
    """Like ``iceberg_spark``, shared by the tests of one module."""
    return java_catalog(spark, tmp_path_factory.mktemp("javacat"))


def java_jdbc_catalog(spark: Any, db: Path, warehouse: Path, name: str = "") -> str:
    """Registers Iceberg Java's JDBC catalog (schema version V1: tables and views) on the
    SQLite file ``db`` with its tables under ``warehouse``; returns its name (a fresh one unless
    given). Skips when the jars are unavailable."""
    jar, why = iceberg_runtime_jar()
    jars, why_not = object_store_jars()  # the SQLite JDBC driver
    if jar is None or not jars:
        pytest.skip(why or why_not)
    name = name or f"jdbc{next(_CATALOG_IDS)}"
    prefix = f"spark.sql.catalog.{name}"
    for key, value in {
        "": "org.apache.iceberg.spark.SparkCatalog",
        ".type": "jdbc",
        ".uri": f"jdbc:sqlite:{db}",
        ".jdbc.schema-version": "V1",
        ".warehouse": str(warehouse),
        ".cache-enabled": "false",
    }.items():
        spark.conf.set(prefix + key, value)
    return name


def java_s3_catalog(spark: Any, sqlite_file: Path, warehouse: str, props: dict[str, str]) -> str:
    """Registers an Iceberg Java JDBC catalog on ``sqlite_file`` whose tables live at the
    ``s3://`` ``warehouse``, read and written with ``S3FileIO`` configured from the ``s3.*``
    ``props``; returns its name (skips when the jars are unavailable)."""
    jar, why = iceberg_runtime_jar()
    jars, why_not = object_store_jars()
    if jar is None or not jars:
        pytest.skip(why or why_not)
    name = f"ices3{next(_CATALOG_IDS)}"
    prefix = f"spark.sql.catalog.{name}"
    settings = {
        "": "org.apache.iceberg.spark.SparkCatalog",
        ".type": "jdbc",
        ".uri": f"jdbc:sqlite:{sqlite_file}",
        ".jdbc.schema-version": "V1",
        ".warehouse": warehouse,
        ".cache-enabled": "false",
        ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        ".s3.path-style-access": "true",
        ".client.region": props.get("s3.region", "us-east-1"),
    }
    for key in ("s3.endpoint", "s3.access-key-id", "s3.secret-access-key"):
        settings[f".{key}"] = props[key]
    for key, value in settings.items():
        spark.conf.set(prefix + key, value)
    return name
