"""Table properties: one parser, validated when set, and bad stored values never brick a table."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import ValidationError
from icefloe.properties import (
    KNOWN,
    KNOWN_PREFIXES,
    PARQUET_CODEC_LEVELS,
    InvalidPropertyWarning,
    TableProperties,
    bool_property,
    int_property,
    parse_value,
    validate_properties,
)
from support.write_util import SCHEMA, catalog, pyiceberg_read, rows, set_properties_elsewhere

INTS = sorted(k for k, v in KNOWN.items() if v.kind == "int")
BOOLS = sorted(k for k, v in KNOWN.items() if v.kind == "bool")
ENUMS = sorted(k for k, v in KNOWN.items() if v.kind == "enum")
#: what a new table stores without being asked (as Iceberg Java's create)
CREATED = {TableProperties.PARQUET_COMPRESSION: "zstd"}


def _named(key: str, value: str) -> str:
    """The pattern every malformed-value error matches: the property and the value."""
    return re.escape(f"{key}={value!r}")


def _in_range(key: str, value: int) -> bool:
    """Whether integer property ``key`` takes ``value`` (a Parquet compression level: in the
    range of the default codec, zstd)."""
    kind = KNOWN[key]
    low, high = kind.minimum, kind.maximum
    if key == TableProperties.PARQUET_COMPRESSION_LEVEL:
        low, high = PARQUET_CODEC_LEVELS["zstd"]
    return (low is None or value >= low) and (high is None or value <= high)


# ---------------------------------------------------------------- the parser, property-based


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(INTS), value=st.integers(-(2**40), 2**40))
def test_integers_parse_or_fail_naming_the_property(key: str, value: int) -> None:
    if _in_range(key, value):
        assert parse_value(key, str(value)) == value
        assert int_property({key: str(value)}, key, 7) == value
    else:
        with pytest.raises(ValidationError, match=_named(key, str(value))):
            validate_properties({key: str(value)})


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(INTS + BOOLS + ENUMS), text=st.text(max_size=12))
def test_any_text_is_accepted_only_when_it_is_a_value_of_the_type(key: str, text: str) -> None:
    kind = KNOWN[key]
    if kind.kind == "int":
        ok = re.fullmatch(r"[+-]?[0-9]+", text) is not None and _in_range(key, int(text))
    elif kind.kind == "bool":
        ok = text.lower() in ("true", "false")  # Java's equalsIgnoreCase("true"), no trimming
    else:
        ok = text.lower() in kind.choices
    if ok:
        validate_properties({key: text})
    else:
        with pytest.raises(ValidationError, match=_named(key, text)):
            validate_properties({key: text})


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.sampled_from(sorted(KNOWN_PREFIXES)),
    column=st.text(min_size=1, max_size=8),
    value=st.sampled_from(
        ["true", "FALSE", "maybe", "full", "truncate(4)", "truncate(0)", "1", "0.05", "0"]
    ),
)
def test_per_column_properties_are_typed(prefix: str, column: str, value: str) -> None:
    key = prefix + column
    valid = {
        "bool": ("true", "FALSE"),
        "metrics": ("full", "truncate(4)"),
        "probability": ("0.05",),
    }
    ok = value in valid[KNOWN_PREFIXES[prefix].kind]
    if ok:
        validate_properties({key: value})
    else:
        with pytest.raises(ValidationError, match=_named(key, value)):
            validate_properties({key: value})


@settings(max_examples=100, deadline=None)
@given(key=st.text(min_size=1, max_size=20), value=st.text(max_size=20))
def test_unknown_properties_are_stored_as_given(key: str, value: str) -> None:
    from icefloe.properties import RESERVED_PROPERTIES, _kind_of

    if key in RESERVED_PROPERTIES or _kind_of(key) is not None:
        return
    validate_properties({key: value})


def test_booleans_read_as_java_does_but_refuse_anything_else() -> None:
    key = TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED
    assert bool_property({key: "TRUE"}, key, False) is True
    assert bool_property({key: "False"}, key, True) is False
    for bad in ("yes", "1", " true", ""):
        with pytest.raises(ValidationError, match=_named(key, bad)):
            bool_property({key: bad}, key, False)


def test_gc_enabled_is_true_only_for_true_as_java_parses_it() -> None:
    """Java's Boolean.parseBoolean ignores case but does not trim: a padded ``true`` stored by
    another engine leaves deletion off there, and must here too."""
    from icefloe.properties import gc_enabled

    key = TableProperties.GC_ENABLED
    assert gc_enabled({}) is True
    assert gc_enabled({key: "TRUE"}) is True
    for off in (" true", "true ", "yes", "1", "", "false"):
        assert gc_enabled({key: off}) is False, off


# ---------------------------------------------------------------- validated when set


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("commit.retry.num-retries", "-1"),
        ("commit.retry.min-wait-ms", "abc"),
        ("write.metadata.delete-after-commit.enabled", "yes"),
        # accepted before, a mistyped value left write-audit-publish off: a write with a wap.id
        # meant to be staged for audit went straight to main
        ("write.wap.enabled", "yes"),
        ("write.wap.enabled", " true"),
        ("write.parquet.bloom-filter-enabled.column.x", "maybe"),
        ("write.manifest.compression-codec", "bogus"),
        ("write.metadata.compression-codec", "zstd"),
        ("write.delete.isolation-level", "read-committed"),
        ("write.metadata.metrics.column.id", "most"),
        ("history.expire.min-snapshots-to-keep", "-1"),
    ],
)
def test_bad_values_are_refused_when_set(tmp_path: Path, key: str, value: str) -> None:
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match=_named(key, value)):
        cat.create_table("ns.created", SCHEMA, properties={key: value})
    t = cat.create_table("ns.t", SCHEMA)
    with pytest.raises(ValidationError, match=_named(key, value)):
        t.set_properties({key: value})
    with pytest.raises(ValidationError, match=_named(key, value)), t.transaction() as tx:
        tx.set_properties({"ok": "1"})
        tx.set_properties({key: value})
    assert cat.load_table("ns.t").properties == CREATED


def test_format_version_is_not_a_stored_property(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, properties={"format-version": "1"})
    assert t.format_version == 1 and "format-version" not in t.properties
    for version in ("7", "3", "two"):
        with pytest.raises(ValidationError, match="upgrade_format_version"):
            t.set_properties({"format-version": version})
    with pytest.raises(ValidationError, match="v7"):
        cat.create_table("ns.v7", SCHEMA, properties={"format-version": "7"})
    with pytest.raises(ValidationError, match=_named("format-version", "two")):
        cat.create_table("ns.two", SCHEMA, properties={"format-version": "two"})
    assert cat.load_table("ns.t").upgrade_format_version(3).format_version == 3
    with pytest.raises(ValidationError, match="reserved"):
        t.set_properties({"current-snapshot-id": "1"})


def test_manifest_codec_error_names_the_property(tmp_path: Path) -> None:
    """Stored by another engine, a bad manifest codec fails the write naming the property."""
    cat = catalog(tmp_path)
    cat.create_table("ns.t", SCHEMA)
    set_properties_elsewhere(tmp_path, "ns.t", {"write.manifest.compression-codec": "bogus"})
    t = cat.load_table("ns.t")
    with pytest.raises(ValidationError, match=_named("write.manifest.compression-codec", "bogus")):
        t.append(rows(0, 3))
    assert t.current_snapshot() is None


# ---------------------------------------------------------------- bad stored values


GOOD = {
    "commit.retry.num-retries": "2",
    "commit.retry.min-wait-ms": "10",
    "write.metadata.previous-versions-max": "5",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.compression-codec": "gzip",
}


@pytest.mark.parametrize(
    "bad",
    [
        {"commit.retry.num-retries": "-1"},
        {"commit.retry.min-wait-ms": "abc", "commit.retry.total-timeout-ms": "soon"},
        {"write.metadata.previous-versions-max": "many"},
        {"write.metadata.delete-after-commit.enabled": "yes"},
        {"write.metadata.compression-codec": "zstd"},
    ],
)
def test_bad_commit_properties_written_elsewhere_never_brick_the_table(
    tmp_path: Path, bad: dict[str, str]
) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA)
    t.append(rows(0, 3))
    if "write.metadata.previous-versions-max" in bad:
        # PyIceberg itself cannot commit with this value: store it without icefloe's check
        with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
            warnings.simplefilter("ignore", InvalidPropertyWarning)  # setup: the bad value lands
            mp.setattr("icefloe.metadata._builder.check_properties", lambda *_: None)
            t.set_properties(bad)
    else:
        set_properties_elsewhere(tmp_path, "ns.t", bad)
    t = cat.load_table("ns.t")
    assert t.properties == {**CREATED, **bad}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.append(rows(3, 3))  # a data commit works on the defaults
        t.set_properties({"unrelated": "1"})
        key = next(iter(bad))
        t.set_properties({key: GOOD[key]})  # the repair
        t.remove_properties(*bad)
    assert any(issubclass(w.category, InvalidPropertyWarning) for w in caught)
    assert all(re.search(r"=.* is invalid", str(w.message)) for w in caught)
    t = cat.load_table("ns.t")
    assert t.properties == {**CREATED, "unrelated": "1"}
    assert sorted(pyiceberg_read(t)["id"].to_pylist()) == list(range(6))


def test_a_bad_wap_switch_written_elsewhere_reads_as_off_as_java_reads_it(tmp_path: Path) -> None:
    """Refused when set, ``write.wap.enabled=yes`` stored by another engine still loads; Java's
    ``Boolean.parseBoolean`` reads it as false, so a write with a ``wap.id`` goes to main (with
    a warning naming the value) until the value is repaired."""
    cat = catalog(tmp_path)
    cat.create_table("ns.t", SCHEMA)
    set_properties_elsewhere(tmp_path, "ns.t", {"write.wap.enabled": "yes"})
    t = cat.load_table("ns.t")
    with pytest.warns(InvalidPropertyWarning, match=_named("write.wap.enabled", "yes")):
        t.append(rows(0, 2), snapshot_properties={"wap.id": "a"})
    assert t.scan().to_arrow().num_rows == 2
    t.set_properties({"write.wap.enabled": "TRUE"})  # the repair
    t.append(rows(2, 2), snapshot_properties={"wap.id": "b"})
    assert t.scan().to_arrow().num_rows == 2  # staged


def test_bad_data_properties_written_elsewhere_refuse_writes_but_allow_the_repair(
    tmp_path: Path,
) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA)
    set_properties_elsewhere(tmp_path, "ns.t", {"write.target-file-size-bytes": "big"})
    t = cat.load_table("ns.t")
    with pytest.raises(ValidationError, match=_named("write.target-file-size-bytes", "big")):
        t.append(rows(0, 3))
    t.set_properties({"write.target-file-size-bytes": "1048576"})
    t.append(rows(0, 3))
    assert t.scan().to_arrow().num_rows == 3
