"""Evolution and history benchmarks: metadata tables, expiry planning and schema commits.

One table on a SQLite catalog gets ``appends`` icefloe appends of ``files`` files each (a
``bucket`` partition per file, manifest merging off, so every append adds a manifest). icefloe
and PyIceberg 0.12 then read the same table: ``inspect.files()`` and ``inspect.partitions()``
decode every manifest of the current snapshot. Expiry planning (``dry_run``: which manifest
lists, manifests and files become unreachable once all but the newest snapshot go) has no
PyIceberg counterpart (its expiry does not delete files). Schema commits add one column each.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness import Harness


def run(h: Harness) -> None:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
    from pyiceberg.types import LongType as PLong

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.types import LongType

    tmp = Path(tempfile.mkdtemp(prefix="icefloe-bench-evolution-"))
    uri = f"sqlite:///{tmp / 'catalog.db'}"
    warehouse = (tmp / "warehouse").as_uri()
    ours = SqlCatalog("bench", uri=uri, warehouse=warehouse)
    theirs = PySqlCatalog("bench", uri=uri, warehouse=warehouse)
    ours.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    t = ours.create_table("db.t", schema, properties={"commit.manifest-merge.enabled": "false"})
    files = h.size(20, 4)
    appends = h.size(100, 10)
    with t.update_spec() as u:
        u.add_field("id", f"bucket[{files}]")
    for i in range(appends):
        ids = pa.array(range(i * 1000, i * 1000 + 200), pa.int64())
        t.append(pa.table({"id": ids, "s": pa.array([str(x) for x in ids.to_pylist()])}))
    entries = t.inspect.files().num_rows
    pt = theirs.load_table("db.t")
    h.compare(
        "inspect-files",
        entries,
        "entry",
        ours=lambda: t.inspect.files(),
        peers={"pyiceberg": lambda: pt.inspect.files()},
        target=">= PyIceberg",
    )
    h.compare(
        "inspect-partitions",
        entries,
        "entry",
        ours=lambda: t.inspect.partitions(),
        peers={"pyiceberg": lambda: pt.inspect.partitions()},
        target=">= PyIceberg",
    )
    future = int(time.time() * 1000) + 10**9
    h.compare(
        "expire-plan",
        len(t.snapshots()),
        "snapshot",
        ours=lambda: t.expire_snapshots(older_than_ms=future, dry_run=True),
        peers={},
        target="no peer (PyIceberg does not delete files)",
    )
    ours.create_table("db.s1", schema)
    ours.create_table("db.s2", schema)
    commits = h.size(30, 3)
    n1 = iter(range(10**9))
    n2 = iter(range(10**9))

    def our_schema_commits() -> None:
        s = ours.load_table("db.s1")
        for _ in range(commits):
            with s.update_schema() as u:
                u.add_column(f"c{next(n1)}", LongType())

    def their_schema_commits() -> None:
        s = theirs.load_table("db.s2")
        for _ in range(commits):
            with s.update_schema() as u:
                u.add_column(f"c{next(n2)}", PLong())

    h.compare(
        "schema-commits",
        commits,
        "commit",
        ours=our_schema_commits,
        peers={"pyiceberg": their_schema_commits},
        target=">= PyIceberg",
    )
