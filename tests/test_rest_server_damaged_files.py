"""A damaged file on ``icefloe serve``'s storage: a well-formed Iceberg error response that
names the damage and the file (a 500: the server's failure, not the client's request), which
icefloe's client raises as ``CorruptFileError`` and other clients read as a valid error."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.exceptions import CorruptFileError
from support.rest import RestServer, new_warehouse

pytestmark = pytest.mark.rest

ROWS = pa.schema([pa.field("id", pa.int64())])

#: Ways a metadata file is damaged: valid JSON that is no table metadata, JSON cut short,
#: bytes that are not JSON (nor UTF-8), an empty file.
DAMAGE = {
    "not-metadata": b'{"format-version": 2}',
    "cut-short": b'{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0',
    "not-json": b"\xff\xfe\x00garbage",
    "empty": b"",
}


def _get(server: RestServer, path: str) -> tuple[int, str, Any]:
    """A raw ``GET``: status, content type and JSON body."""
    req = urllib.request.Request(server.url + path)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return int(resp.status), resp.headers.get("Content-Type"), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.headers.get("Content-Type"), json.loads(exc.read())


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_metadata_file_is_a_corrupt_file_error_of_the_client(
    rest_server: RestServer, damage: str
) -> None:
    """The table's current metadata file damaged on disk: a raw ``GET`` gets a 500
    ``IcebergErrorResponse`` of type ``CorruptFileException`` naming the file, and icefloe's
    client raises ``CorruptFileError`` naming it (it was a plain ``IcebergError`` of type
    ``ServerError``)."""
    warehouse = new_warehouse()
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    try:
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS)
        path = Path(t.metadata_location.removeprefix("file://"))
        path.write_bytes(DAMAGE[damage])

        status, content_type, body = _get(rest_server, f"/v1/{warehouse}/namespaces/db/tables/t")
        assert (status, content_type) == (500, "application/json")
        assert set(body) == {"error"}
        error = body["error"]
        assert set(error) == {"message", "type", "code"}
        assert (error["code"], error["type"]) == (500, "CorruptFileException")
        assert error["message"].startswith("a file on the server's storage is damaged: ")
        assert str(path) in error["message"]

        with pytest.raises(CorruptFileError, match=r"HTTP 500 CorruptFileException: ") as e:
            c.load_table("db.t")
        assert f"metadata file {t.metadata_location}" in str(e.value)
        assert "damaged" in rest_server.log_text()
    finally:
        c.close()


@pytest.mark.interop
def test_pyiceberg_reads_the_damage_as_a_server_error(rest_server: RestServer) -> None:
    """Another client reads the answer as a valid error response: PyIceberg raises its
    ``ServerError`` with the type and the file in the message."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog
    from pyiceberg.exceptions import ServerError

    warehouse = new_warehouse()
    py = PyRestCatalog("py", uri=rest_server.url, warehouse=warehouse)
    py.create_namespace("db")
    t = py.create_table("db.t", schema=ROWS)
    path = Path(t.metadata_location.removeprefix("file://"))
    path.write_bytes(DAMAGE["not-metadata"])
    with pytest.raises(ServerError, match="CorruptFileException") as e:
        py.load_table("db.t")
    assert path.name in str(e.value)
