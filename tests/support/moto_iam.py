"""moto's S3 and IAM server as its own process with authentication on: S3 refuses keys that
IAM deleted, or whose user's policy does not allow the request."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.rest import _die_with_parent, free_port

REGION = "us-east-1"
BUCKET = "vended"
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


def bucket_policy(*buckets: str, read_only: bool = False) -> str:
    """An IAM policy allowing every S3 action (or, ``read_only``, reads and listings) on
    ``buckets`` and their objects only."""
    resources = [r for b in buckets for r in (f"arn:aws:s3:::{b}", f"arn:aws:s3:::{b}/*")]
    actions = ["s3:GetObject", "s3:ListBucket"] if read_only else "s3:*"
    statement = {"Effect": "Allow", "Action": actions, "Resource": resources}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})
