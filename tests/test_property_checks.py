"""Table property values are checked when set, so writes never meet a raw error later.

Format versions must be integers, the Parquet compression level must suit the codec (and is
ignored for codecs without levels, as in Java), integers must fit Java's ``int``/``long``,
booleans, counts and name mappings are parsed, and per-column metrics properties name columns
of the schema and follow renames and drops.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NoSuchTableError, ValidationError
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.types import LongType, NestedField, StringType, StructType
from icefloe.write import native_writer
from icefloe.write.properties import ParquetOptions
from support.rest import RestServer, new_warehouse
from support.write_util import SCHEMA, catalog, rows

CODEC = "write.parquet.compression-codec"
LEVEL = "write.parquet.compression-level"
METRICS = "write.metadata.metrics.column."


def _table(tmp_path: Path, **kw: Any) -> tuple[SqlCatalog, Table]:
    cat = catalog(tmp_path)
    return cat, cat.create_table("ns.t", SCHEMA, **kw)


def _format_version_in_file(table: Table) -> object:
    with open(table.metadata_location.removeprefix("file://")) as f:
        return json.load(f)["format-version"]


# ---------------------------------------------------------------- format version


@pytest.mark.parametrize("version", [2.0, 3.0, True, np.float64(2), "2.0", None])
def test_upgrade_to_a_non_integer_version_is_refused_before_any_commit(
    tmp_path: Path, version: Any
) -> None:
    cat, t = _table(tmp_path, format_version=1)
    before = t.metadata_location
    with pytest.raises(ValidationError, match="format-version"):
        t.upgrade_format_version(version)
    again = cat.load_table("ns.t")
    assert again.metadata_location == before and again.format_version == 1


@pytest.mark.parametrize("version", [np.int64(2), np.uint8(3), 2, "3"])
def test_upgrade_takes_integral_numpy_ints_as_ints(tmp_path: Path, version: Any) -> None:
    cat, t = _table(tmp_path, format_version=1)
    t.upgrade_format_version(version)
    t.append(rows(0, 3))
    again = cat.load_table("ns.t")
    assert again.format_version == int(version) and type(again.format_version) is int
    assert type(_format_version_in_file(again)) is int
    assert again.scan().count() == 3


@pytest.mark.parametrize(
    "kw",
    [
        {"format_version": 3.0},
        {"format_version": True},
        {"format_version": np.float64(2)},
        {"properties": {"format-version": 2.0}},
        {"properties": {"format-version": "3.0"}},
    ],
)
def test_create_table_refuses_a_non_integer_format_version(
    tmp_path: Path, kw: dict[str, Any]
) -> None:
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match="format-version"):
        cat.create_table("ns.t", SCHEMA, **kw)
    with pytest.raises(NoSuchTableError):
        cat.load_table("ns.t")


def test_format_version_and_its_property_must_agree(tmp_path: Path) -> None:
    """Both given, the argument won silently over the property."""
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match="disagree"):
        cat.create_table("ns.t", SCHEMA, format_version=3, properties={"format-version": "2"})
    with pytest.raises(NoSuchTableError):
        cat.load_table("ns.t")
    t = cat.create_table("ns.t", SCHEMA, format_version=2, properties={"format-version": "2"})
    assert t.format_version == 2


@pytest.mark.rest
def test_a_rest_create_checks_the_format_version_before_sending(rest_server: RestServer) -> None:
    cat = RestCatalog("r", uri=rest_server.url, warehouse=new_warehouse())
    cat.create_namespace("ns")
    with pytest.raises(ValidationError, match="disagree"):
        cat.create_table("ns.t", SCHEMA, format_version=3, properties={"format-version": "2"})
    with pytest.raises(ValidationError, match="format-version"):
        cat.create_table("ns.t", SCHEMA, format_version=3.0)  # type: ignore[arg-type]
    assert not cat.table_exists("ns.t")
    assert cat.create_table("ns.t", SCHEMA, format_version=np.int64(3)).format_version == 3


def test_create_table_takes_a_numpy_int_format_version(tmp_path: Path) -> None:
    cat, t = _table(tmp_path, format_version=np.int64(3))
    t.append(rows(0, 3))
    again = cat.load_table("ns.t")
    assert again.format_version == 3 and type(_format_version_in_file(again)) is int


# ---------------------------------------------------------------- Parquet compression level


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("codec", ["snappy", "lz4", "lz4_raw", "uncompressed"])
def test_a_level_is_ignored_for_codecs_without_levels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str, native: bool
) -> None:
    monkeypatch.setattr(native_writer, "ENABLED", native)
    _, t = _table(tmp_path, properties={CODEC: codec, LEVEL: "99"})
    assert ParquetOptions.from_properties(t.properties).compression_level is None
    t.append(rows(0, 200))
    assert t.scan().count() == 200


@pytest.mark.parametrize(
    ("codec", "level"),
    [
        ("zstd", "23"),
        ("zstd", "-131073"),
        (None, "99"),  # the default codec is zstd
        ("gzip", "10"),
        ("gzip", "-2"),
        ("brotli", "12"),
        ("brotli", "-1"),
    ],
)
def test_a_level_out_of_the_codec_range_is_refused_when_set(
    tmp_path: Path, codec: str | None, level: str
) -> None:
    props = {LEVEL: level} if codec is None else {CODEC: codec, LEVEL: level}
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match=LEVEL):
        cat.create_table("ns.t", SCHEMA, properties=props)
    t = cat.create_table("ns.t", SCHEMA)
    with pytest.raises(ValidationError, match=LEVEL):
        t.set_properties(props)  # codec and level in one call
    if codec is not None:
        t.set_properties({CODEC: codec})
        with pytest.raises(ValidationError, match=LEVEL):
            t.set_properties({LEVEL: level})  # the codec is already the table's
    assert LEVEL not in cat.load_table("ns.t").properties


@pytest.mark.parametrize(
    ("codec", "level"), [(None, "99"), ("gzip", "-2"), ("zstd", "23"), ("zstd", "-200000")]
)
def test_an_avro_level_out_of_the_codec_range_is_refused(
    tmp_path: Path, codec: str | None, level: str
) -> None:
    """As for Parquet: a level Java's Avro codecs would refuse (its writers then failed)."""
    avro_level = "write.avro.compression-level"
    props = {"write.format.default": "avro", avro_level: level}
    if codec is not None:
        props["write.avro.compression-codec"] = codec
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match=avro_level):
        cat.create_table("ns.t", SCHEMA, properties=props)
    t = cat.create_table("ns.t", SCHEMA, properties={"write.format.default": "avro"})
    t.set_properties({avro_level: "9"})  # in range for the default codec (gzip)
    assert avro_level in cat.load_table("ns.t").properties


def test_changing_the_codec_checks_the_level_already_set(tmp_path: Path) -> None:
    _, t = _table(tmp_path, properties={CODEC: "snappy", LEVEL: "99"})
    with pytest.raises(ValidationError, match=LEVEL):
        t.set_properties({CODEC: "zstd"})
    t.set_properties({CODEC: "brotli", LEVEL: "11"})
    assert t.properties[CODEC] == "brotli" and t.properties[LEVEL] == "11"


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("codec", "level"),
    [("zstd", "22"), ("zstd", "-5"), ("zstd", "0"), ("gzip", "9"), ("gzip", "-1"), ("brotli", "0")],
)
def test_levels_in_range_write_with_both_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str, level: str, native: bool
) -> None:
    monkeypatch.setattr(native_writer, "ENABLED", native)
    _, t = _table(tmp_path, properties={CODEC: codec, LEVEL: level})
    assert ParquetOptions.from_properties(t.properties).compression_level == int(level)
    t.append(rows(0, 200))
    assert t.scan().count() == 200


def test_a_bad_level_stored_by_another_engine_fails_writes_with_a_validation_error() -> None:
    with pytest.raises(ValidationError, match=LEVEL):
        ParquetOptions.from_properties({CODEC: "gzip", LEVEL: "99"})
    assert ParquetOptions.from_properties({CODEC: "snappy", LEVEL: "99"}).compression_level is None


# ---------------------------------------------------------------- Parquet codec names

DELETE_CODEC = "write.delete.parquet.compression-codec"


def _codecs(table: Table) -> tuple[set[str], set[str]]:
    """The codecs of the column chunks of ``table``'s data files and of its delete files, as
    pyarrow names them (``LZ4`` is the ``LZ4_RAW`` of the Parquet format, its ``LZ4`` being
    pyarrow's ``LZ4_HADOOP``)."""
    import pyarrow.parquet as pq

    def codecs(paths: list[str]) -> set[str]:
        out = set()
        for path in paths:
            meta = pq.ParquetFile(path.removeprefix("file://")).metadata
            for rg in range(meta.num_row_groups):
                row_group = meta.row_group(rg)
                out |= {row_group.column(c).compression for c in range(row_group.num_columns)}
        return out

    files = table.inspect.files().to_pydict()
    data = [p for p, c in zip(files["file_path"], files["content"], strict=True) if c == 0]
    deletes = [p for p, c in zip(files["file_path"], files["content"], strict=True) if c != 0]
    return codecs(data), codecs(deletes)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("codec", "written"),
    [
        ("zstd", "ZSTD"),
        ("gzip", "GZIP"),
        ("snappy", "SNAPPY"),
        ("brotli", "BROTLI"),
        ("lz4", "LZ4"),  # LZ4_RAW, which Java reads (pyarrow writes no Hadoop-framed LZ4)
        ("lz4_raw", "LZ4"),
        ("LZ4_RAW", "LZ4"),  # Java's names in any case
        ("uncompressed", "UNCOMPRESSED"),
        ("UNCOMPRESSED", "UNCOMPRESSED"),
    ],
)
def test_javas_parquet_codec_names_are_accepted_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str, written: str, native: bool
) -> None:
    """Java maps the codec with ``CompressionCodecName.valueOf(name.toUpperCase())``: ``lz4_raw``
    is one of its names (refused here before), for data and delete files."""
    monkeypatch.setattr(native_writer, "ENABLED", native)
    props = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    _, t = _table(tmp_path, properties={**props, CODEC: codec, DELETE_CODEC: codec})
    t.append(rows(0, 200))
    t.delete("id = 3")
    assert _codecs(t) == ({written}, {written})
    t.set_properties({CODEC: "zstd", DELETE_CODEC: codec.upper()})
    t.set_properties({CODEC: codec, DELETE_CODEC: "snappy"})  # both ways round
    assert t.properties[CODEC] == codec
    if codec.lower() == "lz4_raw":
        duckdb = pytest.importorskip("duckdb")
        path = t.inspect.files().column("file_path")[0].as_py().removeprefix("file://")
        found = duckdb.sql(f"SELECT DISTINCT compression FROM parquet_metadata('{path}')")
        assert found.fetchall() == [("LZ4_RAW",)]


@pytest.mark.parametrize("key", [CODEC, DELETE_CODEC])
def test_codec_none_is_refused_when_set_suggesting_uncompressed(tmp_path: Path, key: str) -> None:
    """Java's Parquet writer knows no codec ``none``: a table with it fails every Java write."""
    cat = catalog(tmp_path)
    for value in ("none", "NONE"):
        with pytest.raises(ValidationError, match=f"{key}.*use 'uncompressed'"):
            cat.create_table("ns.t", SCHEMA, properties={key: value})
    t = cat.create_table("ns.t", SCHEMA)
    before = t.properties
    with pytest.raises(ValidationError, match=f"{key}.*use 'uncompressed'"):
        t.set_properties({key: "none"})
    assert cat.load_table("ns.t").properties == before
    assert before.get(key) != "none"


def test_a_table_with_codec_none_from_another_engine_stays_writable(tmp_path: Path) -> None:
    """PyIceberg stores ``none`` (its name for no compression): icefloe writes such a table
    uncompressed, and its other changes commit, though ``none`` cannot be set here."""
    from support.write_util import set_properties_elsewhere

    props = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    cat, t = _table(tmp_path, properties=props)
    cat.close()
    set_properties_elsewhere(tmp_path, "ns.t", {CODEC: "none", DELETE_CODEC: "none"})
    t = catalog_again(tmp_path).load_table("ns.t")
    assert t.properties[CODEC] == "none"
    assert ParquetOptions.from_properties(t.properties).compression == "none"
    t.append(rows(0, 200))
    t.delete("id = 3")
    assert _codecs(t) == ({"UNCOMPRESSED"}, {"UNCOMPRESSED"})
    t.set_properties({LEVEL: "5", "k": "v"})  # ignored for uncompressed, as in Java
    assert t.properties[CODEC] == "none" and t.properties["k"] == "v"
    assert t.scan().count() == 199


def catalog_again(tmp_path: Path) -> SqlCatalog:
    """The SQLite catalog of :func:`catalog` opened again (its namespace exists)."""
    return SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())


# ---------------------------------------------------------------- integer ranges

INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.parquet.page-size-bytes", str(INT_MAX + 1)),
        ("write.parquet.dict-size-bytes", str(INT_MAX + 1)),
        ("write.parquet.row-group-size-bytes", str(INT_MAX + 1)),
        ("commit.retry.num-retries", str(INT_MAX + 1)),
        ("write.parquet.row-group-limit", str(LONG_MAX + 1)),
        ("write.target-file-size-bytes", "99999999999999999999"),
        ("history.expire.max-snapshot-age-ms", str(LONG_MAX + 1)),
        ("write.metadata.metrics.default", f"truncate({INT_MAX + 1})"),
        (METRICS + "s", "truncate(99999999999999999999)"),
        (LEVEL, str(-(2**31) - 1)),
    ],
)
def test_integers_beyond_java_int_or_long_are_refused(tmp_path: Path, key: str, value: str) -> None:
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match=r"must be|truncate length"):
        cat.create_table("ns.t", SCHEMA, properties={key: value})


@pytest.mark.parametrize("native", [True, False])
def test_the_largest_accepted_integers_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    monkeypatch.setattr(native_writer, "ENABLED", native)
    props = {
        "write.parquet.page-size-bytes": str(INT_MAX),
        "write.parquet.dict-size-bytes": str(INT_MAX),
        "write.parquet.row-group-limit": str(LONG_MAX),
        "write.target-file-size-bytes": str(LONG_MAX),
        "write.metadata.metrics.default": f"truncate({INT_MAX})",
    }
    _, t = _table(tmp_path, properties=props)
    t.append(rows(0, 200))
    assert t.scan().count() == 200


# ---------------------------------------------------------------- other values


@pytest.mark.parametrize(
    ("key", "bad", "good"),
    [
        ("write.object-storage.enabled", "maybe", "TRUE"),
        ("write.summary.partition-limit", "-1", "0"),
        ("write.summary.partition-limit", "x", "10"),
        # Iceberg Java's Spark writes fail on another distribution mode
        ("write.distribution-mode", "bogus", "hash"),
        ("write.delete.distribution-mode", "sorted", "NONE"),
        ("write.update.distribution-mode", "", "range"),
        ("write.merge.distribution-mode", "hash ", "hash"),
        ("schema.name-mapping.default", "not json", '[{"field-id": 1, "names": ["id"]}]'),
        ("schema.name-mapping.default", '{"a": 1}', "[]"),
        (
            "schema.name-mapping.default",
            '[{"field-id": "1", "names": ["id"]}]',
            '[{"names": ["id"]}]',
        ),
    ],
)
def test_values_are_parsed_when_set(tmp_path: Path, key: str, bad: str, good: str) -> None:
    cat, t = _table(tmp_path)
    with pytest.raises(ValidationError, match=key):
        t.set_properties({key: bad})
    with pytest.raises(ValidationError, match=key):
        cat.create_table("ns.other", SCHEMA, properties={key: bad})
    t.set_properties({key: good})
    assert cat.load_table("ns.t").properties[key] == good


# ---------------------------------------------------------------- per-column metrics keys

NESTED = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "s", StringType()),
    NestedField(3, "st", StructType(NestedField(4, "inner", StringType()))),
)


def _metrics_keys(table: Table) -> dict[str, str]:
    return {k: v for k, v in table.properties.items() if k.startswith(METRICS)}


def test_metrics_for_a_missing_column_are_refused(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match="could not find column 'nosuch'"):
        cat.create_table("ns.t", NESTED, properties={METRICS + "nosuch": "full"})
    t = cat.create_table("ns.t", NESTED, properties={METRICS + "st.inner": "full"})
    with pytest.raises(ValidationError, match="could not find column 'nosuch'"):
        t.set_properties({METRICS + "nosuch": "full"})
    with pytest.raises(ValidationError, match="could not find column 'S'"):
        t.set_properties({METRICS + "S": "full"})  # names are case-sensitive, as in Java
    with t.transaction() as tx:  # a column added earlier in the same transaction
        with tx.update_schema() as u:
            u.add_column("added", StringType())
        tx.set_properties({METRICS + "added": "counts"})
    assert _metrics_keys(cat.load_table("ns.t")) == {
        METRICS + "st.inner": "full",
        METRICS + "added": "counts",
    }


def test_metrics_keys_follow_renames_in_the_schema_commit(tmp_path: Path) -> None:
    props = {
        "write.metadata.metrics.default": "none",
        METRICS + "s": "full",
        METRICS + "st.inner": "counts",
        METRICS + "id": "truncate(4)",
    }
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", NESTED, properties=props)
    versions = len(t.metadata.metadata_log)
    with t.update_schema() as u:
        u.rename_column("s", "s2")
        u.rename_column("st", "st2")
    again = cat.load_table("ns.t")
    assert len(again.metadata.metadata_log) == versions + 1  # one commit
    assert _metrics_keys(again) == {
        METRICS + "s2": "full",
        METRICS + "st2.inner": "counts",
        METRICS + "id": "truncate(4)",
    }
    arrow = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("s2", pa.string()),
            pa.field("st2", pa.struct([pa.field("inner", pa.string())])),
        ]
    )
    again.append(pa.table({"id": [1], "s2": ["x"], "st2": [{"inner": "y"}]}, schema=arrow))
    (bounds,) = again.inspect.files().column("lower_bounds").to_pylist()
    assert dict(bounds)[2] == b"x"  # s2 keeps its full metrics


def test_metrics_keys_of_swapped_names_are_swapped(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    props = {METRICS + "s": "full", METRICS + "id": "counts"}
    t = cat.create_table("ns.t", NESTED, properties=props)
    with t.update_schema() as u:
        u.rename_column("s", "tmp")
    with t.update_schema() as u:
        u.rename_column("id", "s")
        u.rename_column("tmp", "id")
    assert _metrics_keys(cat.load_table("ns.t")) == {
        METRICS + "id": "full",
        METRICS + "s": "counts",
    }


def test_metrics_keys_of_dropped_columns_are_removed(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    props = {METRICS + "s": "full", METRICS + "st.inner": "counts", METRICS + "id": "none"}
    t = cat.create_table("ns.t", NESTED, properties=props)
    with t.update_schema() as u:
        u.delete_column("s")
        u.delete_column("st")  # its child's key goes too
    assert _metrics_keys(cat.load_table("ns.t")) == {METRICS + "id": "none"}


def test_a_stored_value_beyond_the_limit_is_read_as_the_limit(tmp_path: Path) -> None:
    # written before the limits (or by another engine): the table stays writable
    from icefloe.metadata import SetProperties

    _, t = _table(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("icefloe.metadata._builder.check_properties", lambda *_: None)
        tx = t.transaction()
        tx.apply([SetProperties({"write.parquet.row-group-size-bytes": "3000000000"})])
        tx.commit_transaction()
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert t.scan().to_arrow().num_rows == 1


def test_bloom_filters_are_written_for_the_columns_that_ask(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    props = {
        "write.parquet.bloom-filter-enabled.column.s": "true",
        "write.parquet.bloom-filter-fpp.column.s": "0.05",
    }
    _, t = _table(tmp_path, properties=props)
    data = rows(0, 2_000)
    t.append(data)
    for path in t.inspect.files().column("file_path").to_pylist():
        md = pq.ParquetFile(path.removeprefix("file://")).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        offsets = {n: md.row_group(0).column(i).bloom_filter_offset for i, n in enumerate(names)}
        assert offsets["s"] is not None and offsets["id"] is None
    assert t.scan(row_filter="s = 's7'").to_arrow().num_rows == 1
    for bad in ("2", "0", "x"):
        with pytest.raises(ValidationError, match="bloom-filter-fpp"):
            t.set_properties(**{"write.parquet.bloom-filter-fpp.column.s": bad})


def test_bloom_filters_asked_of_boolean_columns_are_left_out(tmp_path: Path) -> None:
    """Parquet has no Bloom filters for booleans (Iceberg Java writes such columns without one);
    the table stays writable, and the other columns asked for get theirs."""
    import pyarrow.parquet as pq

    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("ns")
    flag = pa.struct([pa.field("on", pa.bool_())])
    schema = pa.schema([("id", pa.int64()), ("b", pa.bool_()), ("st", flag)])
    enabled = "write.parquet.bloom-filter-enabled.column."
    props = {enabled + "b": "true", enabled + "st.on": "true", enabled + "id": "true"}
    t = cat.create_table("ns.t", schema, properties=props)
    data = pa.table({"id": [1, 2], "b": [True, None], "st": [{"on": False}, None]}, schema=schema)
    t.append(data)
    assert t.scan().to_arrow().equals(data)
    path = t.inspect.files().column("file_path")[0].as_py().removeprefix("file://")
    md = pq.ParquetFile(path).metadata
    offsets = {
        md.schema.column(i).path: md.row_group(0).column(i).bloom_filter_offset
        for i in range(md.num_columns)
    }
    assert offsets == {"id": offsets["id"], "b": None, "st.on": None} and offsets["id"]
    cat.close()


def _bitset_bytes(path: str) -> int:
    """The bitset size of a file's first Bloom filter (its length less the filter's header,
    the bitset being a power of two of bytes)."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path.removeprefix("file://")).metadata
    length = next(
        md.row_group(0).column(i).bloom_filter_length
        for i in range(md.num_columns)
        if md.row_group(0).column(i).bloom_filter_length
    )
    return 1 << (int(length).bit_length() - 1)


@pytest.mark.parametrize(
    ("max_bytes", "fpp", "n"),
    [("1024", "0.01", 20_000), (None, "0.01", 900_000), (None, "1e-300", 3_000)],
)
def test_bloom_filters_stay_within_max_bytes(
    tmp_path: Path, max_bytes: str | None, fpp: str, n: int
) -> None:
    """Filters were sized with another formula than pyarrow's and came out up to twice the
    cap (a tiny probability: 128 MiB for 3,000 values). Over the cap, a filter of the cap's
    size is written (Java clamps its filters so), and it still finds every value."""
    props = {
        "write.parquet.bloom-filter-enabled.column.id": "true",
        "write.parquet.bloom-filter-fpp.column.id": fpp,
    }
    if max_bytes:
        props["write.parquet.bloom-filter-max-bytes"] = max_bytes
    cap = int(max_bytes or 1 << 20)
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("ns")
    t = cat.create_table("ns.t", pa.schema([("id", pa.int64())]), properties=props)
    t.append(pa.table({"id": pa.array(range(n), pa.int64())}))
    (path,) = t.inspect.files().column("file_path").to_pylist()
    assert cap // 2 < _bitset_bytes(path) <= cap
    for probe in (0, n // 2, n - 1):
        assert t.scan(row_filter=f"id = {probe}").to_arrow().num_rows == 1
    # under the cap, the filter asked for
    props.pop("write.parquet.bloom-filter-max-bytes", None)
    options = ParquetOptions.from_properties(props).bloom_filter_options(1_000)
    assert options == {"id": {"ndv": 1_000, "fpp": float(fpp)}} or fpp == "1e-300"


def test_decimals_are_stored_as_the_spec_says_by_every_writer(tmp_path: Path) -> None:
    """decimal(P <= 9) as INT32 and decimal(P <= 18) as INT64 (the spec's Parquet types):
    pyarrow's writer (large writes, other codecs, Bloom filters) stored them as
    FIXED_LEN_BYTE_ARRAY, the native one as integers."""
    import decimal

    import pyarrow.parquet as pq

    schema = pa.schema(
        [("d9", pa.decimal128(9, 2)), ("d18", pa.decimal128(18, 2)), ("d38", pa.decimal128(38, 2))]
    )
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("ns")
    values = [decimal.Decimal("1.25"), decimal.Decimal("-3.50"), None]
    data = pa.table({n: pa.array(values, schema.field(n).type) for n in schema.names})
    for name, props in (
        ("native", {}),
        ("gzip", {"write.parquet.compression-codec": "gzip"}),
        ("bloom", {"write.parquet.bloom-filter-enabled.column.d9": "true"}),
    ):
        t = cat.create_table(f"ns.{name}", schema, properties=props)
        t.append(data)
        (path,) = t.inspect.files().column("file_path").to_pylist()
        md = pq.ParquetFile(path.removeprefix("file://")).metadata
        kinds = [md.schema.column(i).physical_type for i in range(3)]
        assert kinds == ["INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"], name
        assert t.scan().to_arrow().equals(data)
        assert t.scan(row_filter="d18 = -3.50").to_arrow().num_rows == 1


def test_manifest_codecs_and_levels_are_the_ones_java_writes(tmp_path: Path) -> None:
    """``write.manifest.compression-codec`` took Avro's own names (``deflate``, ``null``,
    ``zstandard``, ``none``), and its level any integer (gzip 99 was clamped): Java's manifest
    writer knows gzip, zstd, snappy and uncompressed, with gzip levels -1 to 9, so every Java
    commit to such a table failed. They are refused when set; the valid ones still write."""
    from support.write_util import catalog

    t = catalog(tmp_path).create_table("ns.m", pa.schema([pa.field("id", pa.int64())]))
    for codec in ("deflate", "null", "zstandard", "none"):
        with pytest.raises(ValidationError, match=r"write\.manifest\.compression-codec"):
            t.set_properties({"write.manifest.compression-codec": codec})
    with pytest.raises(ValidationError, match="gzip takes a level from -1 to 9"):
        t.set_properties({"write.manifest.compression-level": "99"})
    with pytest.raises(ValidationError, match="zstd takes a level"):
        t.set_properties(
            {"write.manifest.compression-codec": "zstd", "write.manifest.compression-level": "40"}
        )
    t.set_properties(
        {"write.manifest.compression-codec": "zstd", "write.manifest.compression-level": "3"}
    )
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert t.scan().to_arrow()["id"].to_pylist() == [1]


@pytest.mark.parametrize("value", [" none ", "full ", "\tcounts", " truncate(8)"])
def test_a_metrics_mode_with_blanks_is_refused(tmp_path: Path, value: str) -> None:
    """Iceberg Java reads a mode with blanks as invalid and falls back to its default, so
    icefloe, which took it trimmed, wrote other metrics than Java for the same table."""
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match="metrics mode"):
        cat.create_table("ns.t", SCHEMA, properties={"write.metadata.metrics.default": value})
    t = cat.create_table("ns.t", SCHEMA)
    with pytest.raises(ValidationError, match="metrics mode"):
        t.set_properties({f"{METRICS}id": value})
    assert f"{METRICS}id" not in t.refresh().properties
