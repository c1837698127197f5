"""REST catalog latency: metadata-only commits and table loads, medians of N, on loopback.

Servers: ``icefloe serve`` (a SQLite catalog) and Iceberg Java's REST server (RESTCatalogAdapter
over a JdbcCatalog on SQLite; classpath resolved as in tests/support/rest.py). Clients: icefloe's
``RestCatalog`` and PyIceberg 0.12's. Also the throughput of 8 threads committing to one table
through ``icefloe serve`` with icefloe's client. Run: ``python benches/bench_rest.py [N]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _median_ms(fn: Callable[[int], None], n: int) -> float:
    fn(-1)  # warm up
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _measure(label: str, catalog: object, name: str, n: int, pyiceberg: bool = False) -> None:
    table = catalog.load_table(name)  # type: ignore[attr-defined]

    def commit(i: int) -> None:
        if pyiceberg:
            with table.transaction() as tx:  # PyIceberg refreshes the table in place
                tx.set_properties(k=str(i))
        else:
            table.set_properties(k=str(i))

    def load(i: int) -> None:
        catalog.load_table(name)  # type: ignore[attr-defined]

    print(
        f"{label:42s} commit {_median_ms(commit, n):6.1f} ms   load {_median_ms(load, n):6.1f} ms"
    )


def _throughput(url: str, warehouse: str | None, name: str, threads: int, each: int) -> float:
    from icefloe.catalog.rest import RestCatalog

    props = {"warehouse": warehouse} if warehouse else {}

    def work() -> None:
        c = RestCatalog("t", uri=url, **props)
        for i in range(each):
            c.load_table(name).set_properties(k=str(i))

    ts = [threading.Thread(target=work) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return threads * each / (time.perf_counter() - t0)


def main() -> None:
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    from icefloe.catalog.rest import RestCatalog
    from support.rest import start_java_rest_server, start_rest_server

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    tmp = Path(tempfile.mkdtemp(prefix="icefloe-bench-rest-"))
    schema = pa.schema([pa.field("id", pa.int64())])
    props = {"commit.retry.num-retries": "100", "commit.retry.min-wait-ms": "5"}
    ours = start_rest_server(tmp / "icefloe")
    try:
        c = RestCatalog("b", uri=ours.url)
        c.create_namespace("db")
        c.create_table("db.a", schema, properties=props)
        c.create_table("db.b", schema, properties=props)
        _measure("icefloe client -> icefloe serve", c, "db.a", n)
        _measure(
            "PyIceberg client -> icefloe serve", PyRestCatalog("p", uri=ours.url), "db.b", n, True
        )
        print(
            "8 threads -> icefloe serve:",
            f"{_throughput(ours.url, None, 'db.a', 8, 10):.1f} commits/s",
        )
    finally:
        ours.stop()
    try:
        java = start_java_rest_server(tmp / "java")
    except RuntimeError as exc:
        print(f"Iceberg Java's REST server unavailable: {exc}")
        return
    try:
        c = RestCatalog("b", uri=java.url)
        c.create_namespace("db")
        c.create_table("db.a", schema, properties=props)
        c.create_table("db.b", schema, properties=props)
        _measure("icefloe client -> Iceberg Java server", c, "db.a", n)
        _measure(
            "PyIceberg client -> Iceberg Java server",
            PyRestCatalog("p", uri=java.url),
            "db.b",
            n,
            True,
        )
        print(
            "8 threads -> Iceberg Java server:",
            f"{_throughput(java.url, None, 'db.a', 8, 10):.1f} commits/s",
        )
    finally:
        java.stop()


if __name__ == "__main__":
    main()
