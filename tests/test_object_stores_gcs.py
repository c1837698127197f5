"""Google Cloud Storage settings as Iceberg Java and PyIceberg name them: the OAuth2 token
(with or without its expiry), Java's ``gcs.no-auth``, settings icefloe cannot apply refused
rather than ignored, and bad values refused with :class:`ValidationError`. The emulator cases
run on fake-gcs-server (``tests/support/emulators.py``), which takes any token."""

from __future__ import annotations

import uuid

import pytest

from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.filesystems import make_filesystem
from icefloe.io import FileIO
from support.emulators import FakeGcs


def _bucket_with_file(fake_gcs: FakeGcs) -> str:
    bucket = f"tok{uuid.uuid4().hex[:10]}"
    io = FileIO(fake_gcs.properties())
    io.make_dirs(f"gs://{bucket}")
    location = f"gs://{bucket}/d/f.txt"
    io.new_output(location).write(b"hello")
    return location


@pytest.mark.parametrize(
    "expiry", [{}, {"gcs.oauth2.token-expires-at": "4102444800000"}], ids=["no-expiry", "expiry"]
)
def test_an_oauth2_token_reads_and_writes(fake_gcs: FakeGcs, expiry: dict[str, str]) -> None:
    """``gcs.oauth2.token`` (what ``icefloe serve --vend-storage-credentials`` hands out) made
    every access a pyarrow ``ValueError``: pyarrow needs the token's expiry with it."""
    location = _bucket_with_file(fake_gcs)
    props = {k: v for k, v in fake_gcs.properties().items() if k != "gcs.anonymous"}
    io = FileIO(props | {"gcs.oauth2.token": "ya29.test-token"} | expiry)
    assert io.new_input(location).read() == b"hello"
    io.new_output(location.replace("f.txt", "g.txt")).write(b"again")
    assert io.new_input(location.replace("f.txt", "g.txt")).read() == b"again"


def test_java_no_auth_is_anonymous(fake_gcs: FakeGcs) -> None:
    location = _bucket_with_file(fake_gcs)
    props = {k: v for k, v in fake_gcs.properties().items() if k != "gcs.anonymous"}
    assert FileIO(props | {"gcs.no-auth": "true"}).new_input(location).read() == b"hello"


@pytest.mark.parametrize(
    ("props", "error", "words"),
    [
        ({"gcs.anonymous": "true", "gcs.oauth2.token": "t"}, ValidationError, "contradict"),
        ({"gcs.no-auth": "sure"}, ValidationError, "gcs.no-auth"),
        (
            {"gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": "soon"},
            ValidationError,
            "epoch",
        ),
        ({"gcs.retry-time-limit-seconds": "1e30"}, ValidationError, "retry-time-limit"),
        ({"gcs.service.host": "http://[::1:4443"}, ValidationError, "gcs.service.host"),
        ({"gcs.encryption-key": "a2V5"}, UnsupportedFeatureError, "encryption keys"),
        ({"gcs.decryption-key": "a2V5"}, UnsupportedFeatureError, "encryption keys"),
    ],
)
def test_settings_that_cannot_work_are_refused(
    props: dict[str, str], error: type[Exception], words: str
) -> None:
    """These were a pyarrow ``ValueError``/``OverflowError``, or (the encryption keys, Java's
    customer-supplied keys) silently ignored, so objects were written without them."""
    with pytest.raises(error, match=words):
        make_filesystem("gs", "bucket", props)
