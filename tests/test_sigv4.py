"""The SigV4 signer against AWS's published vectors (the SigV4 test suite and the S3 examples)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import pytest

from icefloe.sigv4 import (
    EMPTY_SHA256,
    Credentials,
    canonical_request,
    sign_headers,
    string_to_sign,
)

SUITE = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SUITE_TIME = datetime(2015, 8, 30, 12, 36, tzinfo=timezone.utc)
S3_DOCS = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
S3_TIME = datetime(2013, 5, 24, tzinfo=timezone.utc)


def _signature(headers: dict[str, str]) -> str:
    return headers["authorization"].rsplit("Signature=", 1)[1]


@pytest.mark.parametrize(
    ("name", "method", "target", "headers", "body", "signature"),
    [
        ("get-vanilla", "GET", "/", {}, b"",
         "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ("get-vanilla-query-order-key-case", "GET", "/?Param2=value2&Param1=value1", {}, b"",
         "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        ("get-vanilla-query-order-value", "GET", "/?Param1=value2&Param1=value1", {}, b"",
         "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"),
        ("get-unreserved", "GET",
         "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", {}, b"",
         "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
        ("post-x-www-form-urlencoded", "POST", "/",
         {"Content-Type": "application/x-www-form-urlencoded"}, b"Param1=value1",
         "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
    ],
)  # fmt: skip
def test_sigv4_test_suite(
    name: str, method: str, target: str, headers: dict[str, str], body: bytes, signature: str
) -> None:
    url = f"https://example.amazonaws.com{target}"
    got = sign_headers(
        method,
        url,
        {"X-Amz-Date": "20150830T123600Z", **headers},
        hashlib.sha256(body).hexdigest(),
        SUITE,
        "us-east-1",
        "service",
    )
    assert _signature(got) == signature, name
    assert got["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
    )


def test_canonical_request_and_string_to_sign_of_the_suite() -> None:
    headers = {"host": "example.amazonaws.com", "x-amz-date": "20150830T123600Z"}
    text, signed = canonical_request(
        "GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1", headers, EMPTY_SHA256
    )
    assert text.split("\n") == [
        "GET",
        "/",
        "Param1=value1&Param2=value2",
        "host:example.amazonaws.com",
        "x-amz-date:20150830T123600Z",
        "",
        "host;x-amz-date",
        EMPTY_SHA256,
    ]
    assert signed == "host;x-amz-date"
    assert string_to_sign(text, "20150830T123600Z", "us-east-1", "service").endswith(
        "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0"
    )


def test_s3_documentation_get_object_and_list_objects() -> None:
    got = sign_headers(
        "GET",
        "https://examplebucket.s3.amazonaws.com/test.txt",
        {"Range": "bytes=0-9", "x-amz-content-sha256": EMPTY_SHA256},
        EMPTY_SHA256,
        S3_DOCS,
        "us-east-1",
        now=S3_TIME,
    )
    assert "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date," in got["authorization"]
    assert _signature(got) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    listing = sign_headers(
        "GET",
        "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
        {"x-amz-content-sha256": EMPTY_SHA256},
        EMPTY_SHA256,
        S3_DOCS,
        "us-east-1",
        now=S3_TIME,
    )
    assert _signature(listing) == (
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
    )


def test_session_token_is_signed_and_secrets_stay_out_of_reprs() -> None:
    creds = Credentials("AKIDEXAMPLE", "very-secret-key", "very-secret-token")
    got = sign_headers("GET", "https://b.s3.amazonaws.com/k", {}, EMPTY_SHA256, creds, "eu-west-1")
    assert got["x-amz-security-token"] == "very-secret-token"
    assert "x-amz-security-token" in got["authorization"].split("SignedHeaders=")[1]
    text = repr(creds)
    assert "very-secret" not in text and "AKIDEXAMPLE" not in text


def test_a_path_is_encoded_once_whether_raw_or_already_encoded() -> None:
    headers = {"host": "b.s3.amazonaws.com", "x-amz-date": "20150830T123600Z"}
    raw, _ = canonical_request(
        "GET", "https://b.s3.amazonaws.com/d/k=1/a b+%.parquet", headers, "x"
    )
    sent, _ = canonical_request(
        "GET", "https://b.s3.amazonaws.com/d/k%3D1/a%20b%2B%25.parquet", headers, "x"
    )
    assert raw == sent
    assert raw.split("\n")[1] == "/d/k%3D1/a%20b%2B%25.parquet"
