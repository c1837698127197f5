"""Spark: icefloe in PySpark against Iceberg's Java runtime on ``local[2]``, same session.

One v3 table (10M rows / ``--quick`` 200k / ``ICEFLOE_BENCH_SPARK_ROWS``: ``id`` long, ``v``
double, ``s`` string) is written by Spark + Iceberg Java on a file-system catalog, then 10% of
its rows are deleted with merge-on-read (deletion vectors). Cases, each icefloe vs Iceberg Java:

- ``format_read_dv_10pct``: ``spark.read.format("icefloe")`` vs ``spark.table`` of the same
  table, both aggregating every column (``count``, ``sum(v)``, ``max(length(s))``) so every
  live row crosses into Spark; ``read_dv_10pct``: the same through ``icefloe.spark.read``
  (``mapInArrow``).
- ``format_write`` / ``write``: ``df.write.format("icefloe")`` / ``icefloe.spark.write`` vs
  ``DataFrame.writeTo(...).append()`` of the same generated rows into new empty tables.
- ``mor_delete_1pct``: a merge-on-read ``DELETE`` of 1% of the rows (``v`` in a band of width
  10 of its uniform 0..1000 range, a new band each run, so every file has matches) from a copy
  of the DV-deleted table: ``icefloe.spark.delete`` vs Spark SQL ``DELETE FROM``, both writing
  DVs merged with those already there. Units are the table's live rows (every file is scanned).
- ``merge_1pct``: an upsert of 1% of the table's size by ``id`` (half the keys matched, half
  new; a new key set each run) into a copy of the table: ``icefloe.spark.merge`` vs ``MERGE
  INTO ... WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`` with
  ``write.merge.mode=merge-on-read``. Units are the table's live rows.
- ``stream_append``: one Structured Streaming micro-batch (``trigger(availableNow=True)``) of
  the table's rows (the format's streaming source) into a new table: the ``icefloe`` sink vs
  Iceberg Java's streaming sink.
- ``compute_statistics``: NDV theta sketches of every column of the DV-deleted table, written to
  a Puffin file and committed for the current snapshot: ``Table.compute_statistics()`` vs
  ``CALL <catalog>.system.compute_table_stats``.

The read and write cases also time the floors of any Python data source
(:mod:`spark_floor`): the table's data files read by ``pyarrow.parquet`` alone (all rows, no
deletes) and yielded to Spark; a sink that drops Spark's Arrow batches (``hand-off``); and a
sink that writes them as zstd Parquet files with pyarrow alone, no Iceberg work
(``Parquet``). No Python source can be faster than these, so their ratio to Iceberg Java bounds
what the format can reach.

Runs are interleaved (icefloe, Java, icefloe, Java, ... after one warm-up each) and each reports
the median wall time and the median CPU time of the whole process tree (this driver, the JVM
and its Python workers; other agents' work on the machine is not in it), with the machine's
load average before and after. On a loaded machine the CPU ratio is the fairer one.

The session is the tests' (``local[2]``) with :func:`icefloe.spark.configure` applied (Arrow
batches of 100,000 rows, no per-row byte-size check in the JVM; Iceberg Java's paths exchange
no Arrow batches, so the settings do not touch the peer). Needs pyspark, Java 17 and the
Iceberg runtime jar (fetched by ``tests/support/spark.py``). ``ICEFLOE_SPARK_PROFILE=<dir>``
(see :mod:`icefloe.spark.worker`) leaves cProfile files of icefloe's executor tasks.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import spark_floor
from harness import Case, Harness, Result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

_TICK = os.sysconf("SC_CLK_TCK")


def _process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system, with reaped children) of ``root`` and its descendants."""
    total = 0
    for pid in _process_tree(root or os.getpid()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15])
    return total / _TICK


@dataclass
class Timing:
    wall: list[float]
    cpu: list[float]

    def median_wall(self) -> float:
        return statistics.median(self.wall)

    def median_cpu(self) -> float:
        return statistics.median(self.cpu)


@dataclass
class SparkCase:
    name: str
    units: int
    target: str
    ours: Timing
    java: Timing
    load: tuple[float, float]
    #: Python-source floors (see :mod:`spark_floor`) by name, in the order they are shown.
    floors: dict[str, Timing] = field(default_factory=dict)


def interleaved(
    fns: dict[str, Callable[[], object]], repeat: int, warmup: int = 1
) -> dict[str, Timing]:
    """Times each function ``repeat`` times, taking turns, after ``warmup`` runs of each.
    Dirty pages are written out before each timed run (untimed): no run pays for the
    write-back of another's files (icefloe's commits ``fsync`` the files they add)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    out = {k: Timing([], []) for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            if hasattr(os, "sync"):
                os.sync()
            c0, w0 = tree_cpu_seconds(), time.perf_counter()
            fn()
            out[key].wall.append(time.perf_counter() - w0)
            out[key].cpu.append(tree_cpu_seconds() - c0)
    return out


def markdown(cases: list[SparkCase], rows: int) -> str:
    """The Spark table: medians of wall and CPU, and Java's time over icefloe's (>1: faster)."""
    lines = [
        f"{rows:,} rows, `local[2]`, medians of interleaved runs; x = Iceberg Java / icefloe "
        "(above 1: icefloe is faster).",
        "",
        "| case | icefloe wall / CPU | Iceberg Java wall / CPU | x wall | x CPU "
        "| Python-source floors wall / CPU (x wall vs Java) | load before-after | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        o, j = c.ours, c.java
        floor = (
            "; ".join(
                f"{k}: {f.median_wall():.2f} s / {f.median_cpu():.2f} s "
                f"(x{j.median_wall() / f.median_wall():.2f})"
                for k, f in c.floors.items()
            )
            or "-"
        )
        lines.append(
            f"| {c.name} | {o.median_wall():.2f} s / {o.median_cpu():.2f} s "
            f"| {j.median_wall():.2f} s / {j.median_cpu():.2f} s "
            f"| x{j.median_wall() / o.median_wall():.2f} | x{j.median_cpu() / o.median_cpu():.2f} "
            f"| {floor} | {c.load[0]:.1f}-{c.load[1]:.1f} | {c.target} |"
        )
    return "\n".join(lines) + "\n"


def run(h: Harness) -> None:
    from pyspark.sql import functions as F

    import icefloe.spark as ispark
    from support import spark as _spark

    n = int(os.environ.get("ICEFLOE_BENCH_SPARK_ROWS") or h.size(10_000_000, 200_000))
    repeat = h.repeat
    base = Path(tempfile.mkdtemp(prefix="bench_spark_"))
    spark = _spark.spark_session(base)
    ispark.configure(spark)  # Arrow batch settings; Iceberg Java's paths do not use Arrow
    cat = _spark.java_catalog(spark, base)
    c = cat.name
    props = (
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read', "
        "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    ddl = "id bigint, v double, s string"
    cat.sql("CREATE NAMESPACE {c}.db")
    source = spark.range(0, n, 1, 4).selectExpr(
        "id", "rand(7) * 1000 AS v", "concat('row-', CAST(id % 100000 AS string)) AS s"
    )
    wanted = set(filter(None, (h.options.get("cases") or "").split(",")))

    def want(case: str) -> bool:
        return not wanted or case in wanted

    # the read table, and one copy per implementation for the delete and merge cases
    copies = [n for case, n in (("mor_delete_1pct", "del"), ("merge_1pct", "mer")) if want(case)]
    for name in ["t", *(f"{k}_{side}" for k in copies for side in ("ours", "java"))]:
        cat.sql(f"CREATE TABLE {{c}}.db.{name} ({ddl}) USING iceberg {props}")
        source.writeTo(f"{c}.db.{name}").append()
        cat.sql(f"DELETE FROM {{c}}.db.{name} WHERE id % 10 = 3")
    table = cat.icefloe().load_table(("db", "t"))
    opts = {"catalog": c, "catalog.type": "hadoop", "catalog.warehouse": str(cat.warehouse)}
    live = n - n // 10
    cases: list[SparkCase] = []

    def compare(
        name: str,
        units: int,
        ours: Callable[[], object],
        java: Callable[[], object],
        target: str,
        floors: dict[str, Callable[[], object]] | None = None,
    ) -> None:
        if not want(name):
            return
        before = os.getloadavg()[0]
        fns = {"icefloe": ours, "iceberg-java": java, **(floors or {})}
        t = interleaved(fns, repeat)
        case = SparkCase(name, units, target, t["icefloe"], t["iceberg-java"], (before, 0.0))
        case.floors = {k: t[k] for k in floors or {}}
        case.load = (before, os.getloadavg()[0])
        cases.append(case)
        hc = Case(h.area, name, units, "rows", target)
        for impl, timing in t.items():
            hc.results.append(Result(impl, min(timing.wall), timing.median_wall()))
        h.cases.append(hc)
        print(markdown([case], n).splitlines()[-1], flush=True)

    def agg(df: Any) -> Any:
        return df.agg(F.count(F.lit(1)), F.sum("v"), F.max(F.length("s"))).collect()

    def java_read() -> Any:
        return agg(spark.table(f"{c}.db.t"))

    # the floor of any Python source: the same data files read by pyarrow alone, no deletes
    spark_floor.register(spark)
    files = sorted({task.data_file.file_path for task in table.scan().plan_files()})
    files = [f.removeprefix("file://") for f in files]

    def floor_read() -> Any:
        return agg(spark_floor.read(spark, files, ddl))

    target = "at least 1.1x Iceberg Java"
    compare(
        "format_read_dv_10pct",
        live,
        lambda: agg(spark.read.format("icefloe").options(**opts).load("db.t")),
        java_read,
        target,
        {"hand-off": floor_read},
    )
    compare("read_dv_10pct", live, lambda: agg(ispark.read(spark, table)), java_read, target)

    counter = iter(range(10_000))

    def java_write() -> None:
        i = next(counter)
        cat.sql(
            f"CREATE TABLE {{c}}.db.j{i} ({ddl}) USING iceberg TBLPROPERTIES ('format-version'='3')"
        )
        source.writeTo(f"{c}.db.j{i}").append()

    def format_write() -> None:
        i = next(counter)
        cat.icefloe().create_table(("db", f"o{i}"), table.schema(), format_version=3)
        source.write.format("icefloe").options(**opts).mode("append").save(f"db.o{i}")

    def mapinarrow_write() -> None:
        i = next(counter)
        t = cat.icefloe().create_table(("db", f"o{i}"), table.schema(), format_version=3)
        ispark.write(source, t)

    def parquet_floor() -> None:
        out = Path(tempfile.mkdtemp(prefix="floor_", dir=base))
        spark_floor.write(source, str(out))
        shutil.rmtree(out)

    compare(
        "format_write",
        n,
        format_write,
        java_write,
        target,
        {"hand-off": lambda: spark_floor.write(source), "Parquet": parquet_floor},
    )
    compare("write", n, mapinarrow_write, java_write, target)

    def band(k: int) -> str:  # 1% of the rows, spread over every file (v is uniform)
        return f"v >= {10 * k} and v < {10 * k + 10}"

    ours_k, java_k = iter(range(11, 100)), iter(range(11, 100))
    del_ours = cat.icefloe().load_table(("db", "del_ours")) if "del" in copies else table
    compare(
        "mor_delete_1pct",
        live,
        lambda: ispark.delete(spark, del_ours, band(next(ours_k))),
        lambda: cat.sql(f"DELETE FROM {{c}}.db.del_java WHERE {band(next(java_k))}"),
        target,
    )

    def upserts(k: int) -> Any:
        """1% of n rows: keys ``id % 200 == k`` (matched unless deleted) and as many new ones."""
        step = 200
        old = spark.range(k, n, step, 4)
        new = spark.range(n + k * (n // step), n + (k + 1) * (n // step), 1, 4)
        return old.unionByName(new).selectExpr(
            "id", "rand(11) * 1000 AS v", "concat('new-', CAST(id AS string)) AS s"
        )

    mer_ours = cat.icefloe().load_table(("db", "mer_ours")) if "mer" in copies else table
    ours_m, java_m = iter(range(1, 200, 2)), iter(range(1, 200, 2))

    def java_merge() -> None:
        upserts(next(java_m)).createOrReplaceTempView("bench_upserts")
        cat.sql(
            "MERGE INTO {c}.db.mer_java t USING bench_upserts s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )

    compare(
        "merge_1pct",
        live,
        lambda: ispark.merge(upserts(next(ours_m)), mer_ours, on=["id"]),
        java_merge,
        target,
    )

    def stream(sink: str) -> None:
        i = next(counter)
        name = f"s{sink[0]}{i}"
        cat.icefloe().create_table(("db", name), table.schema(), format_version=3)
        rows = (
            spark.readStream.format("icefloe")
            .options(**opts)
            .option("skip-delete-snapshots", "true")
            .load("db.t")
        )
        w = rows.writeStream.option("checkpointLocation", str(base / "ck" / name))
        if sink == "icefloe":
            q = w.format("icefloe").options(**opts).trigger(availableNow=True).start(f"db.{name}")
        else:
            q = w.format("iceberg").trigger(availableNow=True).toTable(f"{c}.db.{name}")
        q.awaitTermination()

    compare("stream_append", n, lambda: stream("icefloe"), lambda: stream("java"), target)

    # NDV sketches of every column of the DV-deleted table, Puffin file written and committed
    # for the current snapshot on both sides (each replaces the other's file for it).
    compare(
        "compute_statistics",
        live,
        lambda: cat.icefloe().load_table(("db", "t")).compute_statistics(),
        lambda: cat.sql("CALL {c}.system.compute_table_stats(table => 'db.t')"),
        "faster than Spark's compute_table_stats",
    )
    print(markdown(cases, n), flush=True)
