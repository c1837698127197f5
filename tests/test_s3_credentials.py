"""S3 credentials (static keys, session tokens, profiles, per-table vended credentials) and the
errors of a missing bucket, wrong credentials and an unreachable endpoint."""

from __future__ import annotations

import logging
import os
import pickle
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import FileIOError, NotFoundError, ValidationError
from icefloe.io import FileIO
from support.s3 import REGION, S3Server

pytestmark = pytest.mark.s3

SECRET = "not-the-secret-0123456789"
TOKEN = "session-token-abcdefghij"
ENV_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _no_keys(server: S3Server) -> dict[str, str]:
    return {"s3.endpoint": server.endpoint, "s3.region": REGION}


def test_session_tokens_reach_the_server(moto_s3: S3Server) -> None:
    assert moto_s3.requests is not None
    base = moto_s3.fresh_location()
    signed = FileIO(moto_s3.properties(**{"s3.session-token": "token-of-the-signer"}))
    signed.new_output(f"{base}/a").write(b"a")  # conditional PUT through icefloe's signer
    arrow = FileIO(moto_s3.properties(**{"s3.session-token": "token-of-pyarrow"}))
    with arrow.new_output(f"{base}/b").create() as out:  # pyarrow's client
        out.write(b"b")
    assert {"token-of-the-signer", "token-of-pyarrow"} <= moto_s3.requests.session_tokens


def test_profile_from_the_shared_credentials_file(
    s3proxy: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = f"{s3proxy.fresh_location()}/p.bin"  # before boto3 sees the profile
    creds = tmp_path / "credentials"
    creds.write_text(
        f"[other]\naws_access_key_id = x\naws_secret_access_key = y\n\n"
        f"[icefloe]\naws_access_key_id = {s3proxy.access_key}\n"
        f"aws_secret_access_key = {s3proxy.secret_key}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_PROFILE", "icefloe")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    io = FileIO(_no_keys(s3proxy))
    io.new_output(location).write(b"via profile")  # signed by icefloe
    assert io.new_input(location).read() == b"via profile"  # read by pyarrow
    monkeypatch.setenv("AWS_PROFILE", "other")
    with pytest.raises(FileIOError, match="access denied"):
        FileIO(_no_keys(s3proxy)).new_input(location).read()


#: Secrets ConfigParser's interpolation would rewrite (``%%`` as ``%``) or refuse.
PERCENT_SECRETS = ["pct%%secret-value", "pct%secret%(x)s"]


def _use_profile_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, secret: str
) -> None:
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", *ENV_KEYS):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("secret", PERCENT_SECRETS)
def test_a_secret_with_percent_signs_is_read_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    """A shared credentials file's values are read literally, as the AWS SDKs read them: a
    secret holding ``%%`` was taken as ``%`` (every request icefloe signed was refused while
    pyarrow, reading the same file, got in) and one holding a lone ``%`` raised an untyped
    configparser error on the first write."""
    import botocore.session

    from icefloe.s3client import resolve_credentials

    _use_profile_file(tmp_path, monkeypatch, "percent-key", secret)
    found = resolve_credentials({})
    assert found is not None
    assert (found.access_key_id, found.secret_access_key) == ("percent-key", secret)
    botocore_creds = botocore.session.Session().get_credentials()
    assert botocore_creds is not None and botocore_creds.secret_key == secret


@pytest.mark.parametrize("secret", PERCENT_SECRETS)
def test_a_profile_secret_with_percent_signs_signs_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    """Against a server checking signatures with a secret holding ``%``, a write icefloe
    signs itself and a read through pyarrow both succeed with the profile's keys."""
    from support.s3 import s3proxy_jar, start_s3proxy

    jar, why = s3proxy_jar()
    if jar is None:
        pytest.skip(why)
    proc, server = start_s3proxy(tmp_path / "s3proxy", secret=secret)
    try:
        location = f"{server.fresh_location()}/p.bin"  # before boto3 sees the profile
        _use_profile_file(tmp_path, monkeypatch, server.access_key, secret)
        io = FileIO(_no_keys(server))
        io.new_output(location).write_new(b"signed with %")  # icefloe's signed PUT
        assert io.new_input(location).read() == b"signed with %"  # pyarrow's client
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_vended_credentials_apply_to_their_table_only(s3proxy: S3Server, tmp_path: Path) -> None:
    wrong = s3proxy.properties(**{"s3.secret-access-key": SECRET})
    catalog = SqlCatalog(
        "vend", uri=f"sqlite:///{tmp_path}/c.db", warehouse=s3proxy.fresh_location(), **wrong
    )
    vended = {
        "s3.access-key-id": s3proxy.access_key,
        "s3.secret-access-key": s3proxy.secret_key,
    }
    table_io = catalog.table_io({}, credentials=vended)
    location = f"{catalog.properties['warehouse']}/t/data/x.bin"
    table_io.new_output(location).write(b"ok")
    assert table_io.new_input(location).read() == b"ok"
    with pytest.raises(FileIOError, match="access denied") as info:
        catalog.io.new_input(location).read()  # the catalog's own keys are wrong
    assert SECRET not in str(info.value)
    assert catalog.table_io({}) is catalog.io  # nothing vended: the catalog's FileIO


def test_storage_credentials_serve_the_locations_under_their_prefix(s3proxy: S3Server) -> None:
    base = s3proxy.fresh_location()
    good = {"s3.access-key-id": s3proxy.access_key, "s3.secret-access-key": s3proxy.secret_key}
    io = FileIO(
        s3proxy.properties(**{"s3.secret-access-key": SECRET}),
        storage_credentials=[(f"{base}/in", good), (f"{base}/in/deeper", {"s3.region": "nowhere"})],
    )
    inside = [f"{base}/in/a.bin", f"{base}/in/sub/b.bin"]
    for location in inside:
        io.new_output(location).write(b"ok")  # icefloe's signed PUT
        assert io.new_input(location).read() == b"ok"  # pyarrow's client
    assert sorted(f.location for f in io.list_prefix(f"{base}/in")) == inside
    with pytest.raises(FileIOError, match="access denied") as info:
        io.new_output(f"{base}/out.bin").write(b"x")  # no prefix matches: the wrong secret
    assert SECRET not in str(info.value)
    assert io.for_location(f"{base}/in/deeper/c").properties["s3.region"] == "nowhere"  # longest
    assert io.for_location(f"{base}/out.bin") is io
    shipped = pickle.loads(pickle.dumps(io))  # as Spark ships it to executors
    assert shipped.new_input(inside[0]).read() == b"ok"
    assert s3proxy.secret_key not in repr(io) and f"{base}/in" in repr(io)
    io.delete_files(inside)
    assert list(io.list_prefix(f"{base}/in")) == []
    with pytest.raises(ValidationError, match="non-empty prefix"):
        FileIO({}, storage_credentials=[("", good)])


def test_a_renewed_prefix_ships_its_renewed_keys(s3proxy: S3Server) -> None:
    """A pickled FileIO (as the Spark paths ship it to executors) carries the credentials a
    storage prefix renewed, not the ones first vended."""
    base = s3proxy.fresh_location()
    FileIO(s3proxy.properties()).new_output(f"{base}/in/a.bin").write(b"ok")
    soon = str(int(time.time() * 1000) + 30_000)  # within the renewal margin
    stale = {"s3.access-key-id": s3proxy.access_key, "s3.secret-access-key": SECRET}
    good = {"s3.access-key-id": s3proxy.access_key, "s3.secret-access-key": s3proxy.secret_key}
    hour = str(int(time.time() * 1000) + 3_600_000)
    io = FileIO(
        _no_keys(s3proxy),
        storage_credentials=[(f"{base}/in", {**stale, "s3.session-token-expires-at-ms": soon})],
        refresh_storage_credentials=lambda: [
            (f"{base}/in", {**good, "s3.session-token-expires-at-ms": hour})
        ],
    )
    assert io.new_input(f"{base}/in/a.bin").read() == b"ok"  # renewed on first use
    shipped = pickle.loads(pickle.dumps(io))
    assert shipped.new_input(f"{base}/in/a.bin").read() == b"ok"
    # never used before pickling: renewed while pickling, since the copy cannot renew
    fresh_io = FileIO(
        _no_keys(s3proxy),
        storage_credentials=[(f"{base}/in", {**stale, "s3.session-token-expires-at-ms": soon})],
        refresh_storage_credentials=lambda: [
            (f"{base}/in", {**good, "s3.session-token-expires-at-ms": hour})
        ],
    )
    assert pickle.loads(pickle.dumps(fresh_io)).new_input(f"{base}/in/a.bin").read() == b"ok"


def test_a_prefix_without_keys_uses_the_renewed_keys_of_the_table(s3proxy: S3Server) -> None:
    """A storage prefix vended with no keys of its own (a region only) reads with the table's
    keys, renewed when they are: not with the expired ones, and not by asking the catalog
    for its own on every file access."""
    base = s3proxy.fresh_location()
    FileIO(s3proxy.properties()).new_output(f"{base}/eu/a.bin").write(b"ok")
    renewals: list[str] = []

    def refresh_table() -> dict[str, str]:
        renewals.append("table")
        return {
            "s3.secret-access-key": s3proxy.secret_key,
            "s3.session-token-expires-at-ms": str(int(time.time() * 1000) + 3_600_000),
        }

    def refresh_prefixes() -> list[tuple[str, dict[str, str]]]:
        renewals.append("prefixes")
        return [(f"{base}/eu", {"s3.region": REGION})]

    expired = s3proxy.properties(
        **{"s3.secret-access-key": SECRET, "s3.session-token-expires-at-ms": "1000"}
    )
    io = FileIO(
        expired,
        refresh_credentials=refresh_table,
        storage_credentials=[(f"{base}/eu", {"s3.region": REGION})],
        refresh_storage_credentials=refresh_prefixes,
    )
    for _ in range(5):
        assert io.new_input(f"{base}/eu/a.bin").read() == b"ok"
    assert renewals == ["table"]


def test_expiring_credentials_are_refreshed(s3proxy: S3Server) -> None:
    location = f"{s3proxy.fresh_location()}/r.bin"
    FileIO(s3proxy.properties()).new_output(location).write(b"data")
    calls: list[int] = []

    def refresh() -> dict[str, str]:
        calls.append(1)
        return {
            "s3.secret-access-key": s3proxy.secret_key,
            "s3.session-token-expires-at-ms": str(int(time.time() * 1000) + 3_600_000),
        }

    expired = s3proxy.properties(
        **{"s3.secret-access-key": SECRET, "s3.session-token-expires-at-ms": "1000"}
    )
    io = FileIO(expired, refresh_credentials=refresh)
    assert io.new_input(location).read() == b"data"
    io.new_output(f"{location}.2").write(b"more")
    assert io.new_input(f"{location}.2").read() == b"more"
    assert calls == [1]  # refreshed once, then valid for an hour
    fresh = s3proxy.properties(**{"s3.session-token-expires-at-ms": str(2**62)})
    FileIO(fresh, refresh_credentials=refresh).new_input(location).read()
    assert calls == [1]


def test_secrets_stay_out_of_reprs_errors_and_logs(
    s3proxy: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    props = s3proxy.properties(**{"s3.secret-access-key": SECRET, "s3.session-token": TOKEN})
    io = FileIO(props)
    text = repr(io)
    assert SECRET not in text and TOKEN not in text and s3proxy.endpoint in text
    client = io.s3_client("s3://b/k")
    assert client is not None and SECRET not in repr(client)
    location = f"{s3proxy.fresh_location()}/s.bin"
    caplog.set_level(logging.DEBUG)
    errors = []
    for action in (
        lambda: io.new_output(location).write(b"x"),
        lambda: io.new_input(location).read(),
        lambda: list(io.list_prefix(location)),
        lambda: io.delete_files([location]),
    ):
        with pytest.raises(FileIOError) as info:
            action()
        errors.append(str(info.value))
        assert "s.bin" in str(info.value)
    for text in [*errors, caplog.text]:
        assert SECRET not in text and TOKEN not in text


def test_missing_bucket_is_named(s3_server: S3Server) -> None:
    io = FileIO(s3_server.properties())
    location = "s3://no-such-bucket-here/t/x.bin"
    for action in (
        lambda: io.new_input(location).read(),
        lambda: io.new_output(location).write(b"x"),
        lambda: io.new_output(location).create().close(),
        lambda: list(io.list_prefix("s3://no-such-bucket-here/t")),
        lambda: io.list_dir("s3://no-such-bucket-here/t"),
    ):
        with pytest.raises(NotFoundError, match="bucket 'no-such-bucket-here' does not exist"):
            action()
    # a file-system catalog on a mistyped bucket: not an empty catalog
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("h", warehouse="s3://no-such-bucket-here/wh", **s3_server.properties())
    for lookup in (cat.list_namespaces, lambda: cat.table_exists("db.t")):
        with pytest.raises(NotFoundError, match="bucket 'no-such-bucket-here' does not exist"):
            lookup()
    assert io.list_dir(f"{s3_server.fresh_location()}/nothing") == []  # the bucket exists


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("kind", ["refused", "silent"])
def test_unreachable_endpoint_fails_in_bounded_time(kind: str, silent_port: int) -> None:
    port = silent_port if kind == "silent" else _closed_port()
    io = FileIO(
        {
            "s3.endpoint": f"http://127.0.0.1:{port}",
            "s3.access-key-id": "k",
            "s3.secret-access-key": SECRET,
            "s3.region": REGION,
            "s3.connect-timeout": "1",
            "s3.request-timeout": "1",
        }
    )
    for action in (
        lambda: io.new_input("s3://b/t/x.bin").read(),
        lambda: io.new_output("s3://b/t/x.bin").write(b"x"),
    ):
        start = time.monotonic()
        with pytest.raises(FileIOError, match=r"s3://b/t/x\.bin") as info:
            action()
        assert time.monotonic() - start < 15
        assert SECRET not in str(info.value)


def test_a_virtual_host_that_does_not_answer_is_named() -> None:
    """With virtual-host addressing a request goes to ``<bucket>.<endpoint host>``: the error
    names that host (it was the endpoint, which may well be up), for icefloe's own requests
    and for pyarrow's."""
    port = _closed_port()
    io = FileIO(
        {
            "s3.endpoint": f"http://localhost:{port}",
            "s3.path-style-access": "false",
            "s3.access-key-id": "k",
            "s3.secret-access-key": SECRET,
            "s3.region": REGION,
            "s3.connect-timeout": "1",
            "s3.request-timeout": "1",
        }
    )
    location = "s3://vhbucket/t/x.bin"
    for action in (
        lambda: io.new_output(location).write(b"x"),  # icefloe's signed PUT
        lambda: io.new_input(location).open(size=1),  # icefloe's single GET
        lambda: io.new_input(location).read(),  # pyarrow
    ):
        with pytest.raises(FileIOError, match=r"s3://vhbucket/t/x\.bin") as info:
            action()
        assert f"vhbucket.localhost:{port}" in str(info.value)
        assert "did not answer" in str(info.value)
        assert f"endpoint http://localhost:{port} did not answer" not in str(info.value)
        assert SECRET not in str(info.value)


def test_without_resolvable_credentials_exclusive_creates_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No keys in the properties, the environment or a profile (an instance role, say): the
    conditional PUT cannot be signed, and the fallback to check-then-write is logged."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    io = FileIO({"s3.endpoint": "http://127.0.0.1:9", "s3.region": REGION})
    with caplog.at_level(logging.WARNING, logger="icefloe.io"):
        assert io.s3_client("s3://b/k") is None
    assert "check-then-write" in caplog.text
    anonymous = FileIO({"s3.anonymous": "true", "s3.region": REGION})
    assert anonymous.s3_client("s3://b/k") is not None  # unsigned requests need no keys


def test_renewed_credentials_without_expiry_are_not_renewed_again(moto_s3: S3Server) -> None:
    """Credentials renewed into ones without an expiry (or session token) replace the old
    expiry and token: no renewal on every later access."""
    location = f"{moto_s3.fresh_location()}/n.bin"
    FileIO(moto_s3.properties()).new_output(location).write(b"data")
    calls: list[int] = []

    def refresh() -> dict[str, str]:
        calls.append(1)
        return {"s3.access-key-id": moto_s3.access_key, "s3.secret-access-key": moto_s3.secret_key}

    io = FileIO(
        moto_s3.properties(
            **{"s3.session-token": "old-token", "s3.session-token-expires-at-ms": "1000"}
        ),
        refresh_credentials=refresh,
    )
    for _ in range(3):
        assert io.new_input(location).read() == b"data"
    assert calls == [1]
    assert "s3.session-token" not in io.properties  # it belonged to the old keys


def test_a_failed_renewal_keeps_valid_credentials(
    moto_s3: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    """Renewal fails (the catalog is down): credentials that have not expired yet go on being
    used, with a warning; expired ones give a FileIOError naming the cause."""
    location = f"{moto_s3.fresh_location()}/f.bin"
    FileIO(moto_s3.properties()).new_output(location).write(b"data")

    calls: list[int] = []

    def refresh() -> dict[str, str]:
        calls.append(1)
        raise ConnectionError("catalog unreachable")

    soon = str(int(time.time() * 1000) + 30_000)  # within the renewal margin, still valid
    io = FileIO(
        moto_s3.properties(**{"s3.session-token-expires-at-ms": soon}), refresh_credentials=refresh
    )
    with caplog.at_level(logging.WARNING, logger="icefloe.io"):
        for _ in range(5):
            assert io.new_input(location).read() == b"data"
    assert "renewing storage credentials failed" in caplog.text
    assert calls == [1]  # tried again seconds later, not on every file access
    expired = FileIO(
        moto_s3.properties(**{"s3.session-token-expires-at-ms": "1000"}),
        refresh_credentials=refresh,
    )
    with pytest.raises(FileIOError, match="expired and renewing them failed: catalog unreachable"):
        expired.new_input(location).read()


_REGIONS = """
from icefloe.io import FileIO
io = FileIO({"s3.access-key-id": "AKIDEXAMPLE", "s3.secret-access-key": "not-the-secret"})
fs, _ = io.resolve("s3://bucket/t/f")
print(io.s3_client("s3://bucket/t/f").region, fs.region)
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "eu-west-1"),  # the shared config file's default profile
        ({"AWS_PROFILE": "other"}, "ap-south-1"),
        ({"AWS_REGION": "eu-central-1"}, "eu-central-1"),
        ({"AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "us-west-2"}, "us-west-2"),
    ],
    ids=["config-default", "config-profile", "aws-region", "both-variables"],
)
def test_without_a_region_property_both_clients_pick_the_same_region(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    # icefloe's own requests (commits, small files, deletes) and pyarrow's (reads, large
    # files) must reach the bucket in one region: the AWS SDK's chain decides for both. A
    # fresh process: the SDK reads the shared config file once per process.
    config = tmp_path / "config"
    config.write_text("[default]\nregion = eu-west-1\n[profile other]\nregion = ap-south-1\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    run_env = {**clean, "AWS_CONFIG_FILE": str(config), **env}
    out = subprocess.run(
        [sys.executable, "-c", _REGIONS], env=run_env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [expected, expected]


def test_a_named_aws_profile_found_nowhere_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``AWS_PROFILE`` naming a profile in neither shared file went on without credentials and
    failed later as access denied; the AWS SDKs refuse it (ProfileNotFound). A profile only in
    the config file (SSO, a role) is left to the SDK's chain."""
    from icefloe.exceptions import ValidationError
    from icefloe.s3client import resolve_credentials

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    credentials, config = tmp_path / "credentials", tmp_path / "config"
    credentials.write_text("[dev]\naws_access_key_id = AKID\naws_secret_access_key = s\n")
    config.write_text("[profile sso]\nsso_start_url = https://example.invalid/start\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "nosuch")
    with pytest.raises(ValidationError, match="AWS profile 'nosuch'") as caught:
        resolve_credentials({})
    assert "AKID" not in str(caught.value)
    monkeypatch.setenv("AWS_PROFILE", "sso")
    assert resolve_credentials({}) is None  # the SDK's chain finds them
    monkeypatch.setenv("AWS_PROFILE", "dev")
    found = resolve_credentials({})
    assert found is not None and found.access_key_id == "AKID"


def test_creating_a_table_in_a_missing_bucket_is_not_found(
    s3_server: S3Server, tmp_path: Path
) -> None:
    """A table created where the bucket does not exist: ``NotFoundError`` naming the bucket
    (still a ``MetadataWriteError``: nothing changed), no entry registered, so the same create
    works once the bucket is there."""
    from icefloe.exceptions import MetadataWriteError, commit_did_not_happen

    bucket = f"missing-{os.urandom(4).hex()}"
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"s3://{bucket}/wh",
        **s3_server.properties(),
    )  # fmt: skip
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(NotFoundError, match=f"bucket '{bucket}' does not exist") as info:
        cat.create_table("db.t", schema)
    assert isinstance(info.value, MetadataWriteError) and commit_did_not_happen(info.value)
    assert getattr(info.value, "bucket", None) == bucket
    assert not cat.table_exists("db.t") and cat.list_tables("db") == []
    _served_create_in_a_missing_bucket(cat, bucket)
    s3_server.bucket(bucket)
    assert s3_server.client().list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
    cat.create_table("db.t", schema).append(pa.table({"id": [1]}))
    assert cat.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
    cat.close()


def _served_create_in_a_missing_bucket(cat: SqlCatalog, bucket: str) -> None:
    """Through ``icefloe serve`` over ``cat``, the same create is the server's storage failing
    (500 ``RuntimeIOException``), not a 404 other clients read as a missing namespace or
    table."""
    pytest.importorskip("uvicorn")
    from icefloe import rest
    from icefloe.catalog.rest import RestCatalog
    from icefloe.exceptions import FileIOError

    with rest.start(cat) as server:
        client = RestCatalog("r", uri=server.url)
        with pytest.raises(FileIOError, match=f"500 RuntimeIOException.*bucket '{bucket}'"):
            client.create_table("db.t", pa.schema([("id", pa.int64())]))
        client.close()
    assert not cat.table_exists("db.t")


def test_tls_settings_icefloe_does_not_read_are_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A key that looks like a TLS setting (``s3.ssl.*``, ``ssl.*``, ``*.tls.*``) is not read
    by icefloe: one warning names it (never its value), once per process; ``jdbc.*`` keys
    are the SQL catalog's own."""
    tag = os.urandom(4).hex()
    keys = [f"s3.ssl.enabled-{tag}", f"ssl.cabundle-{tag}", f"adls.tls.verify-{tag}",
            f"s3.ssl-verify-{tag}"]  # fmt: skip
    value = f"value-never-logged-{tag}"
    props = {**dict.fromkeys(keys, value), f"jdbc.ssl-{tag}": value, "s3.region": REGION,
             f"s3.sslish-{tag}": value, f"write.hostless-{tag}": value}  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="icefloe"):
        FileIO(props)
        FileIO(props)  # once per key
        cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path), **props)
        assert isinstance(cat.io, FileIO)
        cat.close()
    warned = [m for r in caplog.records if "TLS setting" in (m := r.getMessage()) and tag in m]
    assert sorted(warned) == sorted(
        f"property {k!r} looks like a TLS setting, which icefloe does not read: it is ignored"
        for k in keys
    )
    assert value not in caplog.text
