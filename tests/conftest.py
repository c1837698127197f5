"""Shared pytest fixtures and the hypothesis profiles.

Hypothesis profiles (env ``ICEFLOE_HYPOTHESIS_PROFILE``, default ``ci`` when ``CI`` is set,
else ``dev``):

- ``ci``: ``derandomize=True`` (and no example database) so a CI run is reproducible (the
  examples are a function of the test's source), ``print_blob=True`` so a failure prints
  the ``@reproduce_failure`` blob. Bugs are hunted by the soak run, not by chance in CI.
- ``dev``: hypothesis' defaults (random seed, example database), ``print_blob=True``.
- ``soak``: like ``dev``; together with ``ICEFLOE_SOAK_FACTOR=N`` every hypothesis test runs
  N times its committed ``max_examples`` (``scripts/soak.sh`` sets both).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

from support.peers import duckdb_connect

# Fixtures from tests/support: the PostgreSQL server and per-backend catalogs, S3 servers and
# warehouses, Azure and GCS emulators, the Spark session and Iceberg Java catalogs, icefloe serve,
# Trino.
pytest_plugins = [
    "support.postgres",
    "support.catalogs",
    "support.spark",
    "support.s3",
    "support.emulators",
    "support.rest",
    "support.trino",
]

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.register_profile("soak", print_blob=True)
settings.load_profile(
    os.environ.get("ICEFLOE_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def _soak_factor() -> int:
    raw = os.environ.get("ICEFLOE_SOAK_FACTOR", "1")
    try:
        factor = int(raw)
    except ValueError:
        raise pytest.UsageError(f"ICEFLOE_SOAK_FACTOR must be an integer, got {raw!r}") from None
    if factor < 1:
        raise pytest.UsageError(f"ICEFLOE_SOAK_FACTOR must be >= 1, got {factor}")
    return factor


#: Fixtures that start a server or an engine, and the marker of the tests that use them (so
#: ``-m "not spark and not postgres"`` deselects every such test, marked in its file or not).
_FIXTURE_MARKERS = {
    "spark": "spark",
    "iceberg_spark": "spark",
    "iceberg_spark_module": "spark",
    "postgres_uri": "postgres",
    "duckdb_con": "interop",
    "trino": "trino",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that use a server or engine fixture (see :data:`_FIXTURE_MARKERS`), then
    scale every hypothesis test's ``max_examples`` by ``ICEFLOE_SOAK_FACTOR``.

    A test's own ``@settings(max_examples=...)`` wins over any profile, so the factor is applied
    to the settings hypothesis attached to the test function (once per function, however many
    parametrized items share it)."""
    for item in items:
        used = getattr(item, "fixturenames", ())
        for name in sorted({m for f, m in _FIXTURE_MARKERS.items() if f in used}):
            item.add_marker(getattr(pytest.mark, name))
    factor = _soak_factor()
    if factor == 1:
        return
    seen: set[int] = set()
    for item in items:
        fn = getattr(item, "obj", None)
        if not getattr(fn, "is_hypothesis_test", False) or id(fn) in seen:
            continue
        seen.add(id(fn))
        current = getattr(fn, "_hypothesis_internal_use_settings", None) or settings.default
        fn._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
            current, max_examples=current.max_examples * factor
        )


@pytest.fixture
def duckdb_con() -> Iterator[Any]:
    """DuckDB with its iceberg extension loaded offline (see tests/support/peers.py)."""
    con = duckdb_connect()
    try:
        yield con
    finally:
        con.close()


@pytest.fixture(autouse=True, scope="session")
def _dictionary_reads_on_small_files() -> Iterator[None]:
    """The reader takes its dictionary path (string columns read as Arrow dictionaries and
    decoded in Rust) only for files of at least ``MIN_DICTIONARY_VALUES`` such values; the
    tests' files are small, so it is taken for every file here, and the tests keep covering it
    (``test_small_files_read_dictionary_columns_plain`` checks the threshold itself)."""
    from icefloe.read import reader

    default = reader.MIN_DICTIONARY_VALUES
    reader.MIN_DICTIONARY_VALUES = 0
    yield
    reader.MIN_DICTIONARY_VALUES = default
