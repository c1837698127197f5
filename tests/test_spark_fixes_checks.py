"""Checks of fixes to the Spark integration: the streaming sink's exactly-once key, executor
errors keeping their icefloe class, the transform functions' source types, and the error of a
row-level delete on a v1 table."""

from __future__ import annotations

import contextlib
import json
import socket
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark_format import KV, catalog_options, kv, src_dst
from support.spark_util import icefloe_catalog

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe import exceptions
from icefloe.catalog.rest.errors import IllegalArgumentError
from icefloe.catalog.rest.http import TransportError
from icefloe.exceptions import IcebergError, ValidationError
from icefloe.rest.idempotency import IdempotencyKeyReused
from icefloe.spark import functions as ifn
from icefloe.spark.errors import executor_errors, icefloe_errors, translate
from icefloe.spark.format_write import (
    BATCH_ID,
    QUERY,
    QUERY_RUN,
    checkpoint_location,
    last_committed_batch,
)
from icefloe.spark.source import IcefloeDataSource
from icefloe.spark.streaming import StreamingError
from icefloe.table.rewrite_manifests import NothingLeftToRewrite
from icefloe.transforms import BucketTransform

pytestmark = pytest.mark.spark


def _run_stream(spark: Any, cat: Any, checkpoint: str) -> None:
    q = (
        spark.readStream.format("icefloe")
        .options(**catalog_options(cat))
        .load("db.src")
        .writeStream.format("icefloe")
        .options(**catalog_options(cat))
        .option("checkpointLocation", checkpoint)
        .start("db.dst")
    )
    try:
        q.processAllAvailable()
    finally:
        q.stop()


# ------------------------------------------------------------------ 1. streaming sink key


@pytest.mark.parametrize("spelling", ["uri", "slash"])
def test_a_replayed_batch_is_not_committed_again_under_another_spelling_of_the_checkpoint(
    spark: Any, tmp_path: Path, spelling: str
) -> None:
    cat, _ = src_dst(spark, tmp_path, f"spell_{spelling}")
    ck = tmp_path / "ck"
    _run_stream(spark, cat, str(ck))
    assert cat.load_table("db.dst").scan().to_arrow().num_rows == 10
    # the driver died after the sink committed batch 0 but before Spark logged it
    (ck / "commits" / "0").unlink()
    (ck / "commits" / ".0.crc").unlink(missing_ok=True)
    other = f"file://{ck}" if spelling == "uri" else f"{ck}/"
    _run_stream(spark, cat, other)
    dst = cat.load_table("db.dst")
    assert sorted(dst.scan().to_arrow()["id"].to_pylist()) == list(range(10))
    assert [s.summary.get(BATCH_ID) for s in dst.snapshots()] == ["0"]


def test_checkpoint_locations_are_compared_in_one_spelling(tmp_path: Path) -> None:
    want = f"file://{tmp_path}/ck"
    for spelling in (f"{tmp_path}/ck", f"{tmp_path}/ck/", f"file:{tmp_path}/ck", want + "/"):
        assert checkpoint_location(spelling) == want
    assert checkpoint_location(f"file://localhost{tmp_path}//ck") == want
    assert checkpoint_location("s3://bucket/a/ck/") == "s3://bucket/a/ck"


def _sink_commit(cat: Any, checkpoint: str, batch: int) -> None:
    """Batch ``batch`` (no rows) committed by a stream writer of the format, as Spark calls
    it, with option ``checkpointLocation`` ``checkpoint`` (Spark gives option names in lower
    case)."""
    from pyspark.sql.types import LongType as SparkLong
    from pyspark.sql.types import StringType as SparkString
    from pyspark.sql.types import StructField, StructType

    schema = StructType([StructField("id", SparkLong()), StructField("k", SparkString())])
    options = {**catalog_options(cat), "checkpointlocation": checkpoint, "path": "db.dst"}
    writer = IcefloeDataSource(options).streamWriter(schema, False)
    writer.commit([], batch)


def test_snapshots_of_older_versions_keep_a_restart_from_committing_again(
    tmp_path: Path,
) -> None:
    cat = icefloe_catalog(tmp_path / "wh", name="legacy")
    cat.create_namespace("db")
    dst = cat.create_table("db.dst", KV, format_version=2)
    ck = tmp_path / "ck"
    # an older version recorded the location as the query was given it, without a run id
    dst.append(kv(range(3)), snapshot_properties={QUERY: f"{ck}/", BATCH_ID: "0"})
    _sink_commit(cat, f"file://{ck}", 0)  # replayed: nothing committed
    dst = dst.refresh()
    assert len(dst.snapshots()) == 1
    assert last_committed_batch(dst, "x", run=None, location=checkpoint_location(str(ck))) == 0
    _sink_commit(cat, str(ck), 1)  # the next batch commits, under the one spelling
    dst = dst.refresh()
    assert [s.summary.get(BATCH_ID) for s in dst.snapshots()] == ["0", "1"]
    assert dst.current_snapshot().summary.get(QUERY) == f"file://{ck}"


def test_the_checkpoint_query_id_names_the_query_whatever_the_location(tmp_path: Path) -> None:
    cat = icefloe_catalog(tmp_path / "wh", name="byrun")
    cat.create_namespace("db")
    dst = cat.create_table("db.dst", KV, format_version=2)
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "metadata").write_text(json.dumps({"id": "run-1"}) + "\n")
    # recorded under a name that is no spelling of the location (a moved checkpoint)
    props = {QUERY: "/elsewhere/ck", QUERY_RUN: "run-1", BATCH_ID: "4"}
    dst.append(kv(range(3)), snapshot_properties=props)
    _sink_commit(cat, str(ck), 4)
    assert len(dst.refresh().snapshots()) == 1
    _sink_commit(cat, str(ck), 5)
    dst = dst.refresh()
    assert [s.summary.get(BATCH_ID) for s in dst.snapshots()] == ["4", "5"]
    assert dst.current_snapshot().summary.get(QUERY_RUN) == "run-1"


# -------------------------------------------------------------- 2./3. executor errors


def _errors() -> list[IcebergError]:
    out: list[IcebergError] = [
        TransportError("POST http://127.0.0.1:9/v1/config: connection refused", maybe_sent=True),
        StreamingError("cannot stream snapshot 1"),
        IllegalArgumentError("bad argument"),
        IdempotencyKeyReused("key reused"),
        NothingLeftToRewrite(),
        exceptions.ParseError("cannot parse", 7),
        exceptions.DeltaLogError("bad log", path="/t/_delta_log/0.json"),
        exceptions.UnsupportedDeltaFeatureError("unsupported", ("catalogManaged",)),
        exceptions.NotIcebergCompatibleError("not compatible", ("a", "b")),
        exceptions.MissingDependencyError.install("x needs y", "spark", name="pyspark"),
    ]
    for name in dir(exceptions):
        cls = getattr(exceptions, name)
        if isinstance(cls, type) and issubclass(cls, IcebergError):
            with contextlib.suppress(TypeError):  # those listed above with their arguments
                out.append(cls(f"message of {name}"))
    return out


def _through_spark(error: IcebergError) -> BaseException:
    """What ``icefloe_errors`` raises for ``error`` raised on an executor: the executor's
    traceback arrives as the text of another exception."""
    try:
        with executor_errors():
            raise error
    except IcebergError:
        text = traceback.format_exc()

    class PythonException(Exception):
        pass

    try:
        with icefloe_errors():
            raise PythonException(f"An exception was thrown from the Python worker.\n{text}")
    except Exception as e:  # the translated error
        return e
    raise AssertionError("icefloe_errors raised nothing")


@pytest.mark.parametrize("error", _errors(), ids=lambda e: type(e).__name__)
def test_every_icefloe_error_comes_back_with_its_class_message_and_attributes(
    error: IcebergError,
) -> None:
    got = _through_spark(error)
    assert type(got) is type(error)
    assert str(got) == str(error)
    for key, value in vars(error).items():
        assert getattr(got, key) == value, key
    if isinstance(error, ImportError):
        assert isinstance(got, ImportError) and got.name == error.name


def test_tags_of_older_versions_are_still_read() -> None:
    got = translate(Exception("x ICEFLOE-ERROR<NoSuchTableError|Z29uZQ==> y"))
    assert type(got) is exceptions.NoSuchTableError and str(got) == "gone"
    # a class outside icefloe is never imported: the base class
    got = translate(Exception("ICEFLOE-ERROR<os.path.Nope|Z29uZQ==>"))
    assert type(got) is IcebergError and str(got) == "gone"


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_rest_catalog_raises_transport_error(spark: Any) -> None:
    ispark.register(spark)
    opts = {
        "catalog": "gone",
        "catalog.type": "rest",
        "catalog.uri": f"http://127.0.0.1:{_refused_port()}/api",
    }
    with pytest.raises(TransportError, match=r"127\.0\.0\.1") as info, icefloe_errors():
        spark.read.format("icefloe").options(**opts).load("db.t").count()
    assert "ICEFLOE-ERROR" not in str(info.value)
    assert info.value.maybe_sent is False


def test_a_stream_stopped_by_a_delete_raises_streaming_error(spark: Any, tmp_path: Path) -> None:
    cat, _ = src_dst(spark, tmp_path, "stops")
    cat.load_table("db.src").delete("id < 5")
    stream = spark.readStream.format("icefloe").options(**catalog_options(cat)).load("db.src")
    q = (
        stream.writeStream.format("icefloe")
        .options(**catalog_options(cat))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .start("db.dst")
    )
    try:
        with pytest.raises(StreamingError, match="skip-"), icefloe_errors():
            q.processAllAvailable()
    finally:
        q.stop()


# ------------------------------------------------------------------ 4. functions


@pytest.fixture(scope="module")
def typed(spark: Any) -> Any:
    return spark.createDataFrame(
        [(1.0, True, "x", 1, 2), (2.5, False, "y", -3, 300), (None, None, None, None, None)],
        "f double, b boolean, s string, t tinyint, sm smallint",
    )


@pytest.mark.parametrize(("column", "type_name"), [("f", "double"), ("b", "boolean")])
def test_bucket_refuses_types_the_spec_does_not_bucket(
    typed: Any, column: str, type_name: str
) -> None:
    with pytest.raises(ValidationError, match=f"type {type_name}"), icefloe_errors():
        typed.select(ifn.bucket(4, column)).collect()


def test_transform_errors_on_executors_arrive_typed(typed: Any) -> None:
    with pytest.raises(ValidationError, match=r"day.*type string"), icefloe_errors():
        typed.select(ifn.days("s")).collect()
    with pytest.raises(ValidationError, match=r"hour.*type double"), icefloe_errors():
        typed.select(ifn.hours("f")).collect()


def test_truncate_refuses_a_declared_type_at_the_call() -> None:
    with pytest.raises(ValidationError, match=r"truncate.*type double"):
        ifn.truncate(4, "f", "double")
    with pytest.raises(ValidationError, match=r"truncate.*type boolean"):
        ifn.truncate(4, "b", "boolean")


def test_tinyint_and_smallint_are_bucketed_as_ints(typed: Any) -> None:
    # as Iceberg Java's system.bucket (BucketInt for tinyint and smallint)
    got = typed.select(ifn.bucket(7, "t").alias("bt"), ifn.bucket(7, "sm").alias("bs")).toArrow()
    want = BucketTransform(7)
    assert got["bt"].to_pylist() == want.apply(pa.array([1, -3, None], pa.int32())).to_pylist()
    assert got["bs"].to_pylist() == want.apply(pa.array([2, 300, None], pa.int32())).to_pylist()


def test_sql_bucket_refuses_a_double_column(spark: Any, typed: Any) -> None:
    ifn.register_functions(spark, prefix="fixchk_")
    typed.createOrReplaceTempView("fixchk_typed")
    with pytest.raises(ValidationError, match="type double"), icefloe_errors():
        spark.sql("SELECT fixchk_bucket(4, f) FROM fixchk_typed").collect()


# ------------------------------------------------------------------ delete on v1


def test_delete_on_a_v1_table_says_what_works(spark: Any, tmp_path: Path) -> None:
    cat = icefloe_catalog(tmp_path / "wh", name="v1del")
    cat.create_namespace("db")
    t = cat.create_table("db.t", KV, format_version=1)
    t.append(kv(range(10)))
    t.append(kv(range(10, 20)))
    t.set_properties({"write.delete.mode": "copy-on-write"})
    with pytest.raises(ValidationError, match=r"upgrade_format_version\(2\)") as info:
        ispark.delete(spark, t.refresh(), "id < 5")
    assert "Table.delete" in str(info.value)
    assert "use write.delete.mode" not in str(info.value)
    # deleting whole files needs no delete file: that works on v1
    ispark.delete(spark, t.refresh(), "id >= 10")
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == list(range(10))
    t.refresh().delete("id < 5")  # what the message advises
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == list(range(5, 10))


def test_delete_names_columns_as_the_session_compares_them(spark: Any, tmp_path: Path) -> None:
    cat = icefloe_catalog(tmp_path / "wh", name="casedel")
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t", KV, format_version=2, properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(kv(range(10)))
    ispark.delete(spark, t.refresh(), "ID < 3")  # Spark's default: case is ignored
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == list(range(3, 10))
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        with pytest.raises(ValidationError, match="ID"):
            ispark.delete(spark, t.refresh(), "ID < 5")
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert t.refresh().scan().to_arrow().num_rows == 7


# ------------------------------------------------------------------ types checked when planned


def test_write_and_merge_check_column_types_before_any_job(spark: Any, tmp_path: Path) -> None:
    """``ispark.write`` and ``ispark.merge`` refuse a DataFrame column whose type cannot be
    written to the table on the driver, naming the column and Spark's cast, before any Spark
    job runs (before, the tasks failed with a pandas hint); nothing is committed."""
    cat = icefloe_catalog(tmp_path / "wh", name="plantypes")
    cat.create_namespace("db")
    t = cat.create_table("db.t", KV, format_version=2)
    t.append(kv(range(3)))
    before = t.refresh().current_snapshot()
    bad = spark.sql("SELECT 1.5D id, 'x' k")
    group = "icefloe-plan-types"
    spark.sparkContext.setJobGroup(group, "refused when planned")
    try:
        match = r"'id' has Spark type double.*cast\(\"bigint\"\)"
        with pytest.raises(ValidationError, match=match):
            ispark.write(bad, t.refresh())
        with pytest.raises(ValidationError, match=match):
            ispark.merge(bad, t.refresh(), on=["k"])
        with pytest.raises(ValidationError, match=r"'ID' has Spark type double.*'id'"):
            ispark.write(spark.sql("SELECT 1.5D ID, 'x' k"), t.refresh())
        assert list(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == []
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert t.refresh().current_snapshot() == before
    ispark.merge(spark.sql("SELECT 7L id, 'x' k"), t.refresh(), on=["id"])
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 7]


def test_merge_refuses_a_source_struct_lacking_fields_before_any_job(
    spark: Any, tmp_path: Path
) -> None:
    """An update replaces whole rows: a source struct without one of the table's fields would
    null it in every matched row, so it is refused, as a missing column is."""
    from icefloe.arrow_schema import schema_to_arrow
    from icefloe.schema import Schema
    from icefloe.types import LongType, NestedField, StringType, StructType

    cat = icefloe_catalog(tmp_path / "wh", name="mergenested")
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(
            2, "s", StructType(NestedField(3, "a", LongType()), NestedField(4, "b", StringType()))
        ),
    )
    t = cat.create_table("db.t", schema, format_version=2)
    t.append(
        pa.table({"id": [1], "s": [{"a": 1, "b": "keep"}]}, schema=schema_to_arrow(t.schema()))
    )
    before = t.refresh().current_snapshot()
    source = spark.sql("SELECT 1L id, named_struct('a', 2L) s")
    with pytest.raises(ValidationError, match=r"lacks the nested fields \['s\.b'\]"):
        ispark.merge(source, t.refresh(), on=["id"])
    assert t.refresh().current_snapshot() == before
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "s": {"a": 1, "b": "keep"}}]
