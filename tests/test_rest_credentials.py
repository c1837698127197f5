"""Vended storage credentials that expire, end to end.

moto runs as its own process with IAM authentication on, so S3 refuses a key once it is
deleted. ``icefloe serve`` (in this process, over a SQL catalog whose warehouse is on that S3)
vends each table load and ``GET .../credentials`` a new access key of a user allowed only S3,
valid for eight seconds: when it expires the key is deleted, as a real store's temporary
credentials stop working. The client holds no S3 keys of its own; it writes and reads through
the vended ones, renews them through the credentials endpoint before they expire, and goes on.
Credentials vended per storage prefix serve the locations under each prefix.
"""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe.io.fileio
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest import config as ep
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import FileIOError
from icefloe.io import FileIO
from support.moto_iam import ALLOW_S3, BUCKET, REGION, AuthMoto, bucket_policy

pytestmark = [pytest.mark.rest, pytest.mark.s3]

TTL_S = 8.0  # how long a vended key lives
RENEW_S = 4.0  # how long before expiry clients renew (a minute outside the tests)


class ShortLivedKeys:
    """A credential provider for ``icefloe serve``: per call a new user allowed only S3 and an
    access key of it, deleted ``TTL_S`` seconds later; ``s3.session-token-expires-at-ms`` says
    when."""

    def __init__(self, moto: AuthMoto) -> None:
        self.moto = moto
        self.vended: list[tuple[tuple[str, ...], str]] = []  # (table, key id)
        self.revoked: set[str] = set()
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []

    def __call__(self, ident: tuple[str, ...], location: str) -> list[tuple[str, dict[str, str]]]:
        iam = self.moto.iam
        with self._lock:
            user = f"reader{len(self.vended)}"
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=ALLOW_S3)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            self.vended.append((ident, key["AccessKeyId"]))
            timer = threading.Timer(TTL_S, self.revoke, args=(user, key["AccessKeyId"]))
            timer.daemon = True
            timer.start()
            self._timers.append(timer)
        expires = int((time.time() + TTL_S) * 1000)
        config = {
            "s3.access-key-id": key["AccessKeyId"],
            "s3.secret-access-key": key["SecretAccessKey"],
            "s3.session-token-expires-at-ms": str(expires),
        }
        return [(location, config)]

    def revoke(self, user: str, key_id: str) -> None:
        with self._lock:
            self.revoked.add(key_id)
        self.moto.iam.delete_access_key(UserName=user, AccessKeyId=key_id)

    def close(self) -> None:
        for t in self._timers:
            t.cancel()


@pytest.fixture
def vending(tmp_path: Path) -> Iterator[tuple[str, ShortLivedKeys, AuthMoto]]:
    """(REST server url, its credential provider, the S3 server)."""
    pytest.importorskip("uvicorn")
    moto = AuthMoto(tmp_path)
    keys = ShortLivedKeys(moto)
    try:
        with _serving(tmp_path, moto, keys) as url:
            yield url, keys, moto
    finally:
        keys.close()
        moto.stop()


@contextmanager
def _serving(tmp_path: Path, moto: AuthMoto, provider: Any) -> Iterator[str]:
    """``icefloe serve`` over a SQL catalog with its warehouse on ``moto``, vending what
    ``provider`` mints; its URL."""
    from icefloe import rest

    backing = SqlCatalog(
        "backing",
        uri=f"sqlite:///{tmp_path}/catalog.db",
        warehouse=f"s3://{BUCKET}/wh",
        **moto.properties(*moto.admin),
    )
    table_config = {"s3.endpoint": moto.endpoint, "s3.region": REGION}
    try:
        with rest.start(backing, credential_provider=provider, table_config=table_config) as s:
            yield s.url
    finally:
        backing.close()


ROWS = pa.schema([pa.field("id", pa.int64())])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def test_expiring_vended_credentials_are_renewed(
    vending: tuple[str, ShortLivedKeys, AuthMoto], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, keys, _ = vending
    # renew RENEW_S before expiry instead of a minute (the keys live TTL_S seconds)
    monkeypatch.setattr(icefloe.io.fileio, "REFRESH_MARGIN_MS", int(RENEW_S * 1000))
    c = RestCatalog("client", uri=url)
    assert not any(k.startswith("s3.access-key") for k in c.properties)
    c.create_namespace("db")
    t = c.create_table("db.t", ROWS)
    first = t.io.properties["s3.access-key-id"]
    t.append(_rows([1, 2]))  # data, manifests and manifest list written with the vended key
    stale = FileIO(dict(t.io.properties))  # the same key, never renewed: the control
    data_file = t.scan().plan_files()[0].data_file.file_path
    # a table created by a create-table transaction keeps the credentials vended for it
    tx = c.create_table_transaction("db.s", ROWS)
    tx.append(_rows([1]))
    tx.commit_transaction()
    s = tx.table
    s.append(_rows([2]))
    # a client whose server offers no credentials endpoint cannot renew
    plain = RestCatalog("plain", uri=url)
    plain.endpoints = plain.endpoints - {ep.TABLE_CREDENTIALS}
    u = plain.create_table("db.u", ROWS)
    u.append(_rows([1]))
    time.sleep(TTL_S + 0.5)
    assert first in keys.revoked  # the store no longer accepts the first key ...
    with pytest.raises(FileIOError, match="access denied"):
        stale.new_input(data_file).read()
    with pytest.raises(FileIOError, match="access denied"):
        u.scan().to_arrow()
    # ... yet the tables go on: their FileIO renews through GET .../credentials
    t.append(_rows([3]))
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert t.io.properties["s3.access-key-id"] != first
    s.append(_rows([3]))
    assert sorted(c.load_table("db.s").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    loaded = c.load_table("db.t")
    time.sleep(TTL_S + 0.5)  # and again, for a table loaded earlier
    assert sorted(loaded.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    # every key came from the provider for these tables
    assert {ident for ident, _ in keys.vended} == {("db", "t"), ("db", "s"), ("db", "u")}
    renewals = sum(1 for ident, _ in keys.vended if ident == ("db", "t"))
    assert renewals >= 5  # create, two loads, and at least two renewals
    secret = t.io.properties["s3.secret-access-key"]
    assert secret not in repr(t.io) and secret not in repr(t)


class PrefixKeys:
    """A credential provider vending three prefixes: the table's location with a key allowed
    only the warehouse bucket, ``s3://other/`` with a key allowed only that bucket, and the
    whole warehouse bucket with a key that may only read it; each key lives ``TTL_S``
    seconds."""

    def __init__(self, moto: AuthMoto) -> None:
        self.moto = moto
        self.vended: dict[str, list[str]] = {"table": [], "other": [], "reader": []}
        self._timers: list[threading.Timer] = []

    def _key(self, scope: str, bucket: str) -> dict[str, str]:
        iam = self.moto.iam
        user = f"{scope}{len(self.vended[scope])}"
        iam.create_user(UserName=user)
        policy = bucket_policy(bucket, read_only=scope == "reader")
        iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=policy)
        key = iam.create_access_key(UserName=user)["AccessKey"]
        self.vended[scope].append(key["AccessKeyId"])
        timer = threading.Timer(
            TTL_S,
            iam.delete_access_key,
            kwargs={"UserName": user, "AccessKeyId": key["AccessKeyId"]},
        )
        timer.daemon = True
        timer.start()
        self._timers.append(timer)
        return {
            "s3.access-key-id": key["AccessKeyId"],
            "s3.secret-access-key": key["SecretAccessKey"],
            "s3.session-token-expires-at-ms": str(int((time.time() + TTL_S) * 1000)),
        }

    def __call__(self, ident: tuple[str, ...], location: str) -> list[tuple[str, dict[str, str]]]:
        return [
            (f"s3://{BUCKET}/", self._key("reader", BUCKET)),  # shorter: never the table's
            (location, self._key("table", BUCKET)),
            ("s3://other/", self._key("other", "other")),
        ]

    def close(self) -> None:
        for t in self._timers:
            t.cancel()


def test_credentials_vended_per_prefix_serve_their_locations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose data files live in another bucket (``write.data.path``) is written, read,
    renewed and cleaned up with the key vended for each location's prefix."""
    pytest.importorskip("uvicorn")
    monkeypatch.setattr(icefloe.io.fileio, "REFRESH_MARGIN_MS", int(RENEW_S * 1000))
    moto = AuthMoto(tmp_path)
    keys = PrefixKeys(moto)
    moto.client("s3", *moto.admin).create_bucket(Bucket="other")
    try:
        with _serving(tmp_path, moto, keys) as url:
            c = RestCatalog("client", uri=url)
            c.create_namespace("db")
            t = c.create_table("db.t", ROWS, properties={"write.data.path": "s3://other/data"})
            # neither vended key can reach the other's bucket: the control
            table_key = FileIO(dict(t.io.properties))
            with pytest.raises(FileIOError, match="access denied"):
                table_key.new_output("s3://other/data/probe").write(b"x")
            # nor can the bucket-wide key write: files under the table's location take the
            # key of the longest prefix they start with, the table's
            reader = FileIO(dict(t.io.for_location(f"s3://{BUCKET}/elsewhere").properties))
            with pytest.raises(FileIOError, match="access denied"):
                reader.new_output(f"{t.location}/probe").write(b"x")
            t.append(_rows([1, 2]))
            t.append(_rows([3]))
            data = _data_files(t)
            assert data and all(p.startswith("s3://other/data/") for p in data)
            assert t.metadata_location.startswith(f"s3://{BUCKET}/wh/")
            assert sorted(c.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
            # the keys of both prefixes expire and are renewed through GET .../credentials
            first = {scope: len(ids) for scope, ids in keys.vended.items()}
            time.sleep(TTL_S + 0.5)
            t.delete("id = 1")
            t.append(_rows([4]))
            assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [2, 3, 4]
            assert len(keys.vended["other"]) > first["other"]
            # a pickled copy (what Spark executors get) holds the renewed keys
            shipped = pickle.loads(pickle.dumps(t.io))
            assert shipped.new_input(_data_files(t)[0]).read()[:4] == b"PAR1"
            # expiry deletes the replaced data files in the other bucket with its key
            admin_s3 = moto.client("s3", *moto.admin)
            t.overwrite(_rows([9]))
            t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
            left = {o["Key"] for o in admin_s3.list_objects_v2(Bucket="other").get("Contents", [])}
            current = {p.removeprefix("s3://other/") for p in _data_files(t)}
            assert left == current
            assert t.scan().to_arrow()["id"].to_pylist() == [9]
            secrets = [v for _, conf in t.io.storage_credentials for v in conf.values()]
            assert not any(s in repr(t.io) for s in secrets if len(s) > 20)
    finally:
        keys.close()
        moto.stop()


def _data_files(t: Any) -> list[str]:
    return [task.data_file.file_path for task in t.scan().plan_files()]
