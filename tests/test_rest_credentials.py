"""Vended storage credentials that expire, end to end.

moto runs as its own process with IAM authentication on, so S3 refuses a key once it is
deleted. ``icefloe serve`` (in this process, over a SQL catalog whose warehouse is on that S3)
vends each table load and ``GET .../credentials`` a new access key of a user allowed only S3,
valid for eight seconds: when it expires the key is deleted, as a real store's temporary
credentials stop working. The client holds no S3 keys of its own; it writes and reads through
the vended ones, renews them through the credentials endpoint before they expire, and goes on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe.io
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest import config as ep
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import FileIOError
from icefloe.io import FileIO
from support.rest import _die_with_parent, free_port

pytestmark = [pytest.mark.rest, pytest.mark.s3]

REGION = "us-east-1"
BUCKET = "vended"
TTL_S = 8.0  # how long a vended key lives
RENEW_S = 4.0  # how long before expiry clients renew (a minute outside the tests)
ALLOW_ALL = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
)
ALLOW_S3 = ALLOW_ALL.replace('"Action": "*"', '"Action": "s3:*"')


class AuthMoto:
    """moto's server process with IAM authentication; :attr:`admin` holds keys allowed all."""

    def __init__(self, base: Path) -> None:
        pytest.importorskip("moto.server", reason="moto[server] is not installed")
        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        # the first four requests (the admin's user, policy and key, the bucket) are not
        # authenticated; every later one is
        env = {
            **os.environ,
            "INITIAL_NO_AUTH_ACTION_COUNT": "4",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        with open(base / "moto.log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)
        iam = self.client("iam", "setup", "setup")
        iam.create_user(UserName="admin")
        iam.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=ALLOW_ALL)
        key = iam.create_access_key(UserName="admin")["AccessKey"]
        self.admin = (key["AccessKeyId"], key["SecretAccessKey"])
        self.client("s3", "setup", "setup").create_bucket(Bucket=BUCKET)
        self.iam = self.client("iam", *self.admin)

    def client(self, service: str, key: str, secret: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            region_name=REGION,
        )

    def properties(self, key: str, secret: str) -> dict[str, str]:
        return {
            "s3.endpoint": self.endpoint,
            "s3.region": REGION,
            "s3.access-key-id": key,
            "s3.secret-access-key": secret,
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


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
    from icefloe import rest

    moto = AuthMoto(tmp_path)
    keys = ShortLivedKeys(moto)
    backing = SqlCatalog(
        "backing",
        uri=f"sqlite:///{tmp_path}/catalog.db",
        warehouse=f"s3://{BUCKET}/wh",
        **moto.properties(*moto.admin),
    )
    table_config = {"s3.endpoint": moto.endpoint, "s3.region": REGION}
    try:
        with rest.start(backing, credential_provider=keys, table_config=table_config) as server:
            yield server.url, keys, moto
    finally:
        keys.close()
        backing.close()
        moto.stop()


ROWS = pa.schema([pa.field("id", pa.int64())])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def test_expiring_vended_credentials_are_renewed(
    vending: tuple[str, ShortLivedKeys, AuthMoto], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, keys, _ = vending
    # renew RENEW_S before expiry instead of a minute (the keys live TTL_S seconds)
    monkeypatch.setattr(icefloe.io, "REFRESH_MARGIN_MS", int(RENEW_S * 1000))
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
