"""Atomic commits of the file-system catalog on S3 (conditional PUT with ``If-None-Match: *``).

The races run on s3proxy, whose conditional create is atomic; moto checks and then writes, so
it only serves the single-writer checks.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.exceptions import AlreadyExistsError, UnknownWriteStateError
from icefloe.io import FileIO
from icefloe.s3client import S3Client, _NoAnswer
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField
from support.s3 import S3Server

pytestmark = pytest.mark.s3

WRITERS = 8
COMMITS = 3
RETRY = {
    "commit.retry.num-retries": "200",
    "commit.retry.min-wait-ms": "5",
    "commit.retry.max-wait-ms": "100",
    "write.metadata.previous-versions-max": "1000",
}


def _client(server: S3Server) -> S3Client:
    client = S3Client.from_properties(server.properties())
    assert client is not None
    return client


def test_conditional_put_loses_to_an_existing_object(s3_server: S3Server) -> None:
    client = _client(s3_server)
    bucket = s3_server.bucket()
    key = s3_server.fresh_location().split("/", 3)[3] + "/v1.metadata.json"
    client.put_object(bucket, key, b"first", if_absent=True)
    with pytest.raises(AlreadyExistsError, match=key):
        client.put_object(bucket, key, b"second", if_absent=True)
    body = s3_server.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == b"first"
    client.put_object(bucket, key, b"third")  # a plain PUT replaces
    assert s3_server.client().get_object(Bucket=bucket, Key=key)["Body"].read() == b"third"


def test_lost_answer_is_resolved_by_content(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PUT reaches the server but its answer is lost: the retry's 412 is told apart from
    a lost race by reading the object back."""
    client = _client(s3_server)
    bucket = s3_server.bucket()
    key = s3_server.fresh_location().split("/", 3)[3] + "/v1.metadata.json"
    real = client._send
    calls: list[str] = []

    def drop_first_answer(method: str, *args: Any, **kwargs: Any) -> Any:
        response = real(method, *args, **kwargs)
        calls.append(method)
        if len(calls) == 1:
            raise _NoAnswer("connection reset")
        return response

    monkeypatch.setattr(client, "_send", drop_first_answer)
    client.put_object(bucket, key, b"ours", if_absent=True)  # no error: it was ours
    assert calls == ["PUT", "PUT", "GET"]
    calls.clear()
    other = key.replace("v1", "v2")
    _client(s3_server).put_object(bucket, other, b"theirs", if_absent=True)
    calls.append("first")  # the next answer is not dropped
    with pytest.raises(AlreadyExistsError):
        client.put_object(bucket, other, b"ours", if_absent=True)

    def never_answers(method: str, *args: Any, **kwargs: Any) -> Any:
        real(method, *args, **kwargs)
        raise _NoAnswer("timed out")

    monkeypatch.setattr(client, "_send", never_answers)
    with pytest.raises(UnknownWriteStateError, match=r"v3\.metadata\.json"):
        client.put_object(bucket, key.replace("v1", "v3"), b"x", if_absent=True)


def _race_create(args: tuple[dict[str, str], str, int]) -> bool:
    props, location, writer = args
    try:
        FileIO(props).new_output(location).write(f"writer {writer}".encode())
    except AlreadyExistsError:
        return False
    return True


def test_eight_processes_create_one_file_one_winner(s3proxy: S3Server) -> None:
    ctx = multiprocessing.get_context("spawn")
    base = s3proxy.fresh_location()
    with ctx.Pool(WRITERS) as pool:
        for round_ in range(3):
            location = f"{base}/v{round_}.metadata.json"
            won = pool.map(_race_create, [(s3proxy.properties(), location, w) for w in range(8)])
            assert sum(won) == 1
            body = FileIO(s3proxy.properties()).new_input(location).read()
            assert body == f"writer {won.index(True)}".encode()


def _committer(props: dict[str, str], warehouse: str, writer: int) -> None:
    catalog = HadoopCatalog("race", warehouse=warehouse, **props)
    table = catalog.load_table("db.t")
    for j in range(COMMITS):
        table.set_properties({f"w{writer}-{j}": str(j)})


def test_eight_writers_on_s3proxy_every_commit_lands_once(s3proxy: S3Server) -> None:
    warehouse = s3proxy.fresh_location()
    props = s3proxy.properties()
    catalog = HadoopCatalog("race", warehouse=warehouse, **props)
    catalog.create_namespace("db")
    catalog.create_table("db.t", Schema(NestedField(1, "id", LongType())), properties=RETRY)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_committer, args=(props, warehouse, w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    table = catalog.load_table("db.t")
    for w in range(WRITERS):
        for j in range(COMMITS):
            assert table.properties[f"w{w}-{j}"] == str(j)  # no commit lost
    total = WRITERS * COMMITS + 1
    assert table.metadata_location.endswith(f"/v{total}.metadata.json")
    log = [e.metadata_file for e in table.metadata_log()]
    assert log == [f"{warehouse}/db/t/metadata/v{v}.metadata.json" for v in range(1, total)]
    # exactly one file per version: each version was won once, and each file is a descendant
    # of the one before (its log ends with the previous version)
    names = sorted(n for n, _ in catalog.io.list_dir(f"{warehouse}/db/t/metadata"))
    assert names == sorted(
        [*(f"v{v}.metadata.json" for v in range(1, total + 1)), "version-hint.text"]
    )
    for v in range(2, total + 1):
        meta = catalog.read_metadata(f"{warehouse}/db/t/metadata/v{v}.metadata.json")
        assert meta.metadata_log[-1].metadata_file.endswith(f"/v{v - 1}.metadata.json")


def _appender(props: dict[str, str], warehouse: str, ready: Any) -> None:
    catalog = HadoopCatalog("crash", warehouse=warehouse, **props)
    table = catalog.load_table("db.t")
    ready.set()
    i = 100
    while True:
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
        i += 1


@pytest.mark.parametrize("delay", [0.2, 0.7])
def test_killed_writer_leaves_a_readable_table(s3proxy: S3Server, delay: float) -> None:
    """A process appending in a loop is killed (SIGKILL) at an arbitrary point of a commit:
    the table reads at some committed state, and the next commit works."""
    warehouse = s3proxy.fresh_location()
    props = s3proxy.properties()
    catalog = HadoopCatalog("crash", warehouse=warehouse, **props)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), True)))
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_appender, args=(props, warehouse, ready))
    proc.start()
    assert ready.wait(120)
    time.sleep(delay)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    after = catalog.load_table("db.t")
    ids = sorted(after.scan().to_arrow().column("id").to_pylist())
    assert ids == [1, *range(100, 100 + len(ids) - 1)]  # whole commits, in order
    assert len(after.snapshots()) == len(ids)
    after.append(pa.table({"id": pa.array([7], pa.int64())}))
    again = catalog.load_table("db.t")
    assert sorted(again.scan().to_arrow().column("id").to_pylist()) == sorted([*ids, 7])


def _dying_append(props: dict[str, str], warehouse: str, when: str) -> None:
    """Child process: append, and die abruptly at ``when`` of the commit."""
    from icefloe.io import OutputFile

    real_write = OutputFile.write

    def write(self: OutputFile, data: bytes, overwrite: bool = False) -> None:
        name = self.location.rsplit("/", 1)[1]
        if when == "before-metadata" and name.endswith(".metadata.json"):
            os._exit(3)  # data files, manifests and manifest list are on S3; nothing else
        if when == "before-hint" and name == "version-hint.text":
            os._exit(4)  # v<N+1>.metadata.json is on S3, the hint still names v<N>
        real_write(self, data, overwrite)

    OutputFile.write = write  # type: ignore[method-assign]
    catalog = HadoopCatalog("crash", warehouse=warehouse, **props)
    catalog.load_table("db.t").append(pa.table({"id": pa.array([2, 3], pa.int64())}))
    os._exit(5)


@pytest.mark.parametrize(("when", "code"), [("before-metadata", 3), ("before-hint", 4)])
def test_writer_dying_at_each_step_of_a_commit(s3proxy: S3Server, when: str, code: int) -> None:
    warehouse = s3proxy.fresh_location()
    props = s3proxy.properties()
    catalog = HadoopCatalog("crash", warehouse=warehouse, **props)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), True)))
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    proc = multiprocessing.get_context("spawn").Process(
        target=_dying_append, args=(props, warehouse, when)
    )
    proc.start()
    proc.join(120)
    assert proc.exitcode == code
    after = catalog.load_table("db.t")
    ids = sorted(after.scan().to_arrow().column("id").to_pylist())
    if when == "before-metadata":  # the old state
        assert ids == [1] and after.metadata_location.endswith("/v2.metadata.json")
    else:  # the new state, found past the stale hint
        assert ids == [1, 2, 3] and after.metadata_location.endswith("/v3.metadata.json")
    after.append(pa.table({"id": pa.array([9], pa.int64())}))
    assert sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [
        *ids,
        9,
    ]
