"""The REST client sends what users configure as it is meant: a token read from a file (with
its line break), non-ASCII tokens and header values as UTF-8 (as ``icefloe serve`` compares
them), a non-ASCII path prefix percent-encoded; a value that cannot be a header is a
``ValidationError`` that never shows it. ``icefloe serve`` refuses a prefix no route could
match."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe import rest
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.http import wire_headers
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import UnauthorizedError, ValidationError

pytestmark = pytest.mark.rest

TOKEN = "tök€n-secret-5f1c"


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = SqlCatalog("b", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    yield cat
    cat.close()


def _round_trip(cat: RestCatalog) -> int:
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2]}))
    return int(cat.load_table("db.t").scan().to_arrow().num_rows)


def test_tokens_from_files_and_beyond_ascii(backing: SqlCatalog, tmp_path: Path) -> None:
    token_file = tmp_path / "token.txt"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    with rest.start(backing, tokens=[TOKEN]) as server:
        cat = RestCatalog("c", uri=server.url, token=token_file.read_text(encoding="utf-8"))
        assert _round_trip(cat) == 2
        # a Latin-1-only token goes as UTF-8 too (it was sent as Latin-1 and refused)
        with pytest.raises(UnauthorizedError):
            RestCatalog("c", uri=server.url, token="tökén")
        for bad in ({"token": TOKEN + "\nX-Other: 1"}, {"token": TOKEN, "header.X-Team": "a\rb"}):
            with pytest.raises(ValidationError, match="line break") as refused:
                RestCatalog("c", uri=server.url, **bad)
            assert "5f1c" not in str(refused.value) and "5f1c" not in repr(refused.value)
        team = RestCatalog("c", uri=server.url, token=TOKEN, **{"header.X-Team": "équipe€"})
        assert team.list_namespaces() == [("db",)]


def test_tokens_beyond_latin1_reach_a_server_comparing_utf8(backing: SqlCatalog) -> None:
    with rest.start(backing, tokens=["tökén"]) as server:
        assert _round_trip(RestCatalog("c", uri=server.url, token="tökén")) == 2


def test_a_prefix_beyond_ascii_is_percent_encoded(backing: SqlCatalog) -> None:
    with rest.start(backing, prefix="équipe ü") as server:
        assert _round_trip(RestCatalog("c", uri=server.url)) == 2


@pytest.mark.parametrize("prefix", ["team%2Da", "a?b", "a#b", "a/../b", "a\\b", "a\nb"])
def test_the_server_refuses_a_prefix_no_route_matches(backing: SqlCatalog, prefix: str) -> None:
    with pytest.raises(ValidationError, match="prefix"):
        rest.create_app(backing, prefix=prefix)


def test_header_names_and_values_are_checked() -> None:
    assert wire_headers({"Authorization": "Bearer ü"}) == {"Authorization": "Bearer ü".encode()}
    with pytest.raises(ValidationError, match="not an HTTP header name"):
        wire_headers({"X Team": "a"})
    with pytest.raises(ValidationError, match="X-A header"):
        wire_headers({"X-A": "a\x00b"})
    assert wire_headers({"X-A": "a\tb"}) == {"X-A": b"a\tb"}
