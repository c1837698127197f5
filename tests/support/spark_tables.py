"""Tables written by Spark with Iceberg's Java runtime (the reference implementation).

:func:`java_tables` builds, in a :class:`~support.spark.JavaCatalog`, v2 and v3 tables that exercise
merge-on-read: rows inserted in several commits, then deleted and updated with
``write.delete.mode`` / ``write.update.mode`` = ``merge-on-read`` (position delete files on v2,
deletion vectors on v3), then the partition spec evolved (``months(ts)`` plus ``bucket(4, id)``)
and more rows written under the new spec.
"""

from __future__ import annotations

from support.spark import JavaCatalog

COLUMNS = (
    "id bigint NOT NULL, name string, ts timestamp, amount decimal(12,2), "
    "tags array<string>, attrs map<string,int>, point struct<x: double, y: double>, "
    "flag boolean, day date, bin binary"
)

MOR = (
    "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read'"
)


def _insert(cat: JavaCatalog, table: str, start: int, count: int) -> None:
    cat.sql(
        f"""INSERT INTO {table}
        SELECT id, CASE WHEN id % 13 = 0 THEN NULL ELSE concat('n', id) END,
               timestamp_seconds(1700000000 + id * 3600),
               CAST(id * 1.25 AS decimal(12,2)),
               array(concat('t', id % 3), CAST(NULL AS string)),
               map('k', CAST(id % 5 AS int)),
               named_struct('x', CAST(id AS double), 'y', CAST(-id AS double)),
               id % 2 = 0,
               date_add(DATE'2024-01-01', CAST(id % 40 AS int)),
               CAST(concat('b', id) AS binary)
        FROM range({start}, {start + count}) AS r(id)"""
    )


def java_tables(
    cat: JavaCatalog, rows: int = 300, file_format: str = "parquet", prefix: str = "v"
) -> dict[str, str]:
    """Creates ``db.<prefix>2`` and ``db.<prefix>3`` (merge-on-read, evolved partitioning) in
    ``cat``, their data files (and v2 position delete files) in ``file_format``; returns
    version (``v2``, ``v3``) -> the table's Spark name."""
    cat.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    names = {}
    for version in (2, 3):
        t = f"{cat.name}.db.{prefix}{version}"
        cat.sql(
            f"CREATE TABLE {t} ({COLUMNS}) USING iceberg PARTITIONED BY (months(ts)) "
            f"TBLPROPERTIES ('format-version'='{version}', {MOR}, "
            f"'write.format.default'='{file_format}')"
        )
        _insert(cat, t, 0, rows)
        _insert(cat, t, rows, rows // 2)
        cat.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
        cat.sql(f"UPDATE {t} SET name = 'updated', amount = amount + 1 WHERE id % 11 = 0")
        cat.sql(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)")
        _insert(cat, t, 2 * rows, rows // 3)
        cat.sql(f"DELETE FROM {t} WHERE id % 17 = 0")
        names[f"v{version}"] = t
    return names
