"""Tables on Azure Blob Storage (Azurite) and Google Cloud Storage (fake-gcs-server): create,
append, delete with deletion vectors, read with icefloe (on Azure, the data files also with
pyarrow's own Azure client), drop with purge."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.io import FileIO
from support.emulators import AZURITE_ACCOUNT, Azurite, FakeGcs
from support.write_util import SCHEMA, SPEC, checksum, rows

pytestmark = pytest.mark.slow


def _scenario(tmp_path: Path, warehouse: str, props: dict[str, str]) -> Any:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=warehouse, **props)
    cat.create_namespace("ns")
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    t.append(rows(0, 100))
    t.append(rows(100, 50))
    t.delete("id < 10")
    want = rows(10, 140)
    assert t.location.startswith(warehouse)
    assert checksum(cat.load_table("ns.t").scan().to_arrow()) == checksum(want)
    files = [f.location for f in t.io.list_prefix(t.location)]
    assert any(f.endswith(".puffin") for f in files) and any(f.endswith(".parquet") for f in files)
    return cat, t, want


def test_azure_blob_storage_on_azurite(tmp_path: Path, azurite: Azurite) -> None:
    container = f"wh{uuid.uuid4().hex[:10]}"
    props = azurite.properties()
    FileIO(props).make_dirs(azurite.location(container, ""))  # the container
    warehouse = azurite.location(container, "warehouse")
    cat, t, _ = _scenario(tmp_path, warehouse, props)
    # The objects are in the container, readable by pyarrow's own Azure client.
    fs = pafs.AzureFileSystem(
        AZURITE_ACCOUNT,
        account_key=props["adls.account-key"],
        blob_storage_authority=azurite.authority,
        blob_storage_scheme="http",
    )
    live = t.inspect.data_files()
    paths = [p.split(".windows.net/", 1)[1] for p in live.column("file_path").to_pylist()]
    stored = sum(pq.read_metadata(f"{container}/{p}", filesystem=fs).num_rows for p in paths)
    assert stored == sum(live.column("record_count").to_pylist()) == 150
    location = t.location
    cat.drop_table("ns.t", purge=True)
    assert not list(FileIO(props).list_prefix(location))


def test_google_cloud_storage_on_fake_gcs(tmp_path: Path, fake_gcs: FakeGcs) -> None:
    bucket = f"wh{uuid.uuid4().hex[:10]}"
    props = fake_gcs.properties()
    io = FileIO(props)
    io.make_dirs(f"gs://{bucket}")  # the bucket
    warehouse = f"gs://{bucket}/warehouse"
    cat, t, want = _scenario(tmp_path, warehouse, props)
    assert checksum(t.scan().to_arrow()) == checksum(want)
    location = t.location
    cat.drop_table("ns.t", purge=True)
    assert not list(io.list_prefix(location))
