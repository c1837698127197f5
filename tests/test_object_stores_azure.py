"""Azure storage credentials and accounts on Azurite: SAS tokens in the forms Azure, Iceberg
Java and PyIceberg give them, per-account tokens and connection strings, the account a location
names, and errors that neither leak a SAS signature nor abort the process."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from icefloe.exceptions import FileIOError, NotFoundError, ValidationError
from icefloe.filesystems import TokenCredentialAzureFileSystem, make_filesystem
from icefloe.io import FileIO
from icefloe.io.errors import scrub
from support.emulators import AZURITE_ACCOUNT, AZURITE_KEY, Azurite

PYTHON_DIR = str(Path(__file__).resolve().parents[1] / "python")


def _endpoint(azurite: Azurite) -> dict[str, str]:
    """Azurite's endpoint without a credential."""
    props = azurite.properties()
    del props["adls.account-key"]
    return props


def account_sas(permissions: str) -> tuple[str, str]:
    """An account SAS for Azurite's account as Azure gives it (no leading ``?``), and its
    signature."""
    expiry = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    to_sign = "\n".join(
        [AZURITE_ACCOUNT, permissions, "b", "sco", "", expiry, "", "https,http", "2021-08-06", ""]
    )
    digest = hmac.new(base64.b64decode(AZURITE_KEY), (to_sign + "\n").encode(), hashlib.sha256)
    sig = base64.b64encode(digest.digest()).decode()
    token = (
        f"sv=2021-08-06&ss=b&srt=sco&sp={permissions}&se={quote(expiry, safe='')}"
        f"&spr=https%2Chttp&sig={quote(sig, safe='')}"
    )
    return token, sig


@pytest.fixture
def blob(azurite: Azurite) -> str:
    """A file holding ``hello`` in a new container of Azurite's account."""
    container = f"az{uuid.uuid4().hex[:10]}"
    io = FileIO(azurite.properties())
    io.make_dirs(azurite.location(container, ""))
    location = azurite.location(container, "d/f.txt")
    io.new_output(location).write(b"hello")
    return location


def _read(props: dict[str, str], location: str) -> bytes:
    with FileIO(props).new_input(location).open() as f:
        return bytes(f.read())


def test_sas_signature_stays_out_of_errors(azurite: Azurite, blob: str) -> None:
    """pyarrow quotes the request URL with the SAS token's parameters sorted and re-encoded:
    the signature is masked there too, for a refused read, a refused write and a missing
    file."""
    token, sig = account_sas("l")  # list only: reading and writing are refused
    io = FileIO({**_endpoint(azurite), "adls.sas-token": "?" + token})
    messages = []
    for attempt in (
        lambda: io.new_input(blob).open().read(),
        lambda: io.new_output(blob.replace("f.txt", "g.txt")).write(b"x"),
    ):
        with pytest.raises(FileIOError) as info:
            attempt()
        messages.append(str(info.value))
    assert "access denied" in messages[0] and "sig=***" in messages[0]
    readable, sig_read = account_sas("rl")
    missing = FileIO({**_endpoint(azurite), "adls.sas-token": readable})
    with pytest.raises(NotFoundError) as info:
        missing.new_input(blob.replace("f.txt", "nothing.txt")).open().read()
    messages.append(str(info.value))
    for text, signature in zip(messages, (sig, sig, sig_read), strict=True):
        assert "sig=" not in text.replace("sig=***", "")
        assert signature[:12] not in text and quote(signature, safe="")[:12] not in text


@pytest.mark.parametrize("leading", ["", "?"])
def test_sas_token_with_or_without_leading_question_mark(
    azurite: Azurite, blob: str, leading: str
) -> None:
    """``adls.sas-token`` as Azure, Iceberg Java and PyIceberg give it (``sv=...``) works as
    well as pyarrow's own form (``?sv=...``)."""
    token, _ = account_sas("rl")
    assert _read({**_endpoint(azurite), "adls.sas-token": leading + token}, blob) == b"hello"


@pytest.mark.parametrize(
    "key",
    [
        f"adls.sas-token.{AZURITE_ACCOUNT}",
        f"adls.sas-token.{AZURITE_ACCOUNT}.dfs.core.windows.net",
        f"adls.sas-token.{AZURITE_ACCOUNT}.blob.core.windows.net",
    ],
)
def test_per_account_sas_token(azurite: Azurite, blob: str, key: str) -> None:
    """Iceberg Java's per-account SAS tokens (which ``icefloe serve`` vends) are used for the
    location's account, before a plain ``adls.sas-token``; another account's are not."""
    token, _ = account_sas("rl")
    wrong, _ = account_sas("l")
    props = {**_endpoint(azurite), key: token, "adls.sas-token": wrong}
    assert _read(props, blob) == b"hello"
    other = {**_endpoint(azurite), key.replace(AZURITE_ACCOUNT, "otheraccount"): token}
    with pytest.raises(ValidationError, match="without a key or SAS token"):
        _read(other, blob)


def test_connection_strings(azurite: Azurite, blob: str) -> None:
    """An Azure connection string (PyIceberg's ``adls.connection-string``) gives the endpoint
    and the credential; Iceberg Java's ``adls.connection-string.<account>`` is the endpoint."""
    endpoint = f"http://{azurite.authority}/{AZURITE_ACCOUNT}"
    azure_form = (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
        f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint};"
    )
    assert _read({"adls.connection-string": azure_form}, blob) == b"hello"
    token, _ = account_sas("rl")
    with_sas = f"BlobEndpoint={endpoint};SharedAccessSignature={token}"
    assert _read({f"adls.connection-string.{AZURITE_ACCOUNT}": with_sas}, blob) == b"hello"
    java_form = {f"adls.connection-string.{AZURITE_ACCOUNT}": endpoint}
    assert _read({**java_form, "adls.account-key": AZURITE_KEY}, blob) == b"hello"
    # another account's string, given for no account in particular, is no credential here
    with pytest.raises(FileIOError, match="no Azure credential"):
        _read({"adls.connection-string": azure_form.replace("=devstore", "=other")}, blob)


def test_iceberg_java_shared_key(azurite: Azurite, blob: str) -> None:
    """Iceberg Java's ``adls.auth.shared-key.account.name``/``.key`` sign requests for the
    account they name; the account name is not masked as a secret."""
    props = {
        **_endpoint(azurite),
        "adls.auth.shared-key.account.name": AZURITE_ACCOUNT,
        "adls.auth.shared-key.account.key": AZURITE_KEY,
    }
    assert _read(props, blob) == b"hello"
    assert AZURITE_ACCOUNT in repr(FileIO(props)) and AZURITE_KEY not in repr(FileIO(props))
    props["adls.auth.shared-key.account.name"] = "otheraccount"
    with pytest.raises(ValidationError, match="without a key or SAS token"):
        _read(props, blob)


def test_account_is_the_locations(azurite: Azurite, blob: str) -> None:
    """A location naming another storage account is not served from ``adls.account-name``'s
    (Azurite keeps each account's containers apart); a location naming none is."""
    props = azurite.properties()
    io = FileIO(props)
    other = blob.replace(f"@{AZURITE_ACCOUNT}.", "@someotheraccount.")
    # the key given is adls.account-name's: never sent to the account a location names
    with pytest.raises(ValidationError, match="'someotheraccount' is reached over http"):
        _read(props, other)
    with pytest.raises(ValidationError, match="'someotheraccount' is reached over http"):
        io.new_output(other.replace("f.txt", "g.txt")).write(b"meant for someotheraccount")
    assert not io.exists(blob.replace("f.txt", "g.txt"))
    # with a key of its own, the other account is asked (Azurite has no such account)
    own_key = f"AccountName=someotheraccount;AccountKey={AZURITE_KEY}"
    own = props | {"adls.connection-string.someotheraccount": own_key}
    with pytest.raises((NotFoundError, FileIOError)):
        _read(own, other)
    # an emulator's address names no account: adls.account-name's is used
    host = blob.split("@", 1)[1].split("/", 1)[0]
    assert _read(props, blob.replace(host, props["adls.blob-storage-authority"])) == b"hello"
    container_path = blob.replace(f"@{AZURITE_ACCOUNT}.dfs.core.windows.net", "")
    assert _read(props, container_path) == b"hello"
    with pytest.raises(ValidationError, match=r"adls\.account-name"):
        FileIO(_endpoint(azurite) | {"adls.account-name": ""}).resolve(container_path)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "MSI_", "IDENTITY_"))}
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_no_credential_on_http_is_refused_not_aborted(azurite: Azurite, blob: str) -> None:
    """Without a key or SAS token, pyarrow falls back to an Azure AD token, which the Azure
    SDK refuses over http by aborting the process: icefloe refuses the configuration."""
    done = _run(
        "from icefloe.io import FileIO\n"
        "from icefloe.exceptions import ValidationError\n"
        f"io = FileIO({_endpoint(azurite)!r})\n"
        "try:\n"
        f"    io.new_input({blob!r}).open().read()\n"
        "except ValidationError as e:\n"
        "    print('refused:', e)\n"
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "refused:" in done.stdout and "adls.account-key" in done.stdout
    assert "adls.blob-storage-scheme=http" in done.stdout


def test_default_credential_failure_is_an_error_not_an_abort(tmp_path: Path) -> None:
    """Reading a metadata file on real Azure with no credential anywhere: pyarrow's
    ``open_input_file`` lets the failure to get a token abort the process; icefloe asks for the
    file's info first, which reports it. The default-credential path itself stays allowed."""
    props = {
        "adls.blob-storage-authority": ".blob.invalid",
        "adls.dfs-storage-authority": ".dfs.invalid",
    }
    fs = make_filesystem("abfss", "someaccount", props)
    assert isinstance(fs, TokenCredentialAzureFileSystem)
    done = subprocess.run(
        [sys.executable, "-m", "icefloe", "describe",
         "abfss://c@someaccount.dfs.core.windows.net/t/metadata/v1.metadata.json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "PYTHONPATH": PYTHON_DIR,
        },
    )  # fmt: skip
    assert done.returncode not in (-6, 134), done.stderr[-500:]
    assert done.returncode != 0
    assert "terminate called" not in done.stderr


def test_scrub_masks_url_query_credentials() -> None:
    """Signatures and credentials in a quoted URL's query are masked whatever their order or
    encoding; other parameters stay."""
    text = (
        "GET 'https://a.blob.core.windows.net/c/f?se=2026&sig=AbC%2Bd%3D&sp=r' failed; "
        "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=deadbeef "
        "and ?X-Amz-Security-Token=FwoG;x=1"
    )
    out = scrub(text)
    for secret in ("AbC", "AKIA", "deadbeef", "FwoG"):
        assert secret not in out
    assert "sig=***&sp=r'" in out and "se=2026" in out and ";x=1" in out


@pytest.mark.parametrize(
    ("connection_string", "want"),
    [
        (
            "DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=a2V5;"
            "EndpointSuffix=core.chinacloudapi.cn",
            {
                "blob_storage_authority": ".blob.core.chinacloudapi.cn",
                "dfs_storage_authority": ".dfs.core.chinacloudapi.cn",
                "account_key": "a2V5",
            },
        ),
        (
            "BlobEndpoint=https://acc.blob.core.windows.net/;SharedAccessSignature=sv=1&sig=x",
            {
                "blob_storage_authority": ".blob.core.windows.net",
                "dfs_storage_authority": ".dfs.core.windows.net",
                "sas_token": "?sv=1&sig=x",
            },
        ),
        (  # Iceberg Java's form: the endpoint URL
            "https://acc.dfs.core.windows.net?sv=1&sig=y",
            {
                "blob_storage_authority": ".blob.core.windows.net",
                "dfs_storage_authority": ".dfs.core.windows.net",
                "sas_token": "?sv=1&sig=y",
            },
        ),
    ],
)
def test_connection_string_endpoints(connection_string: str, want: dict[str, str]) -> None:
    """A connection string's endpoints become pyarrow's authorities (the account in front),
    its key or SAS token the credential."""
    fs = make_filesystem("abfss", "acc", {"adls.connection-string.acc": connection_string})
    options = fs.__reduce__()[1][0]
    assert {k: options[k] for k in want} == want
    assert options["blob_storage_scheme"] == options["dfs_storage_scheme"] == "https"


def test_a_shared_connection_string_of_another_account_is_not_in_the_way(
    azurite: Azurite, blob: str
) -> None:
    """A connection string given for no account in particular whose AccountName is another
    account's made every read of this account fail, its own SAS token notwithstanding."""
    token, _ = account_sas("rl")
    props = _endpoint(azurite) | {
        "adls.connection-string": f"AccountName=elsewhere;AccountKey={AZURITE_KEY}",
        f"adls.sas-token.{AZURITE_ACCOUNT}": token,
    }
    assert _read(props, blob) == b"hello"
    mine = _endpoint(azurite) | {
        f"adls.connection-string.{AZURITE_ACCOUNT}": "AccountName=elsewhere;AccountKey=x"
    }
    with pytest.raises(ValidationError, match="is for storage account 'elsewhere'"):
        _read(mine, blob)


def test_an_azure_ad_token_is_checked_once_in_a_while_not_on_every_open() -> None:
    """Asking for a file's info before each open (so a token that cannot be had is an error,
    not an abort) cost a request per file read; once a request got a token, opens within
    the next minutes go straight to the file."""

    asked: list[str] = []

    class Counting(TokenCredentialAzureFileSystem):  # type: ignore[misc]
        def get_file_info(self, path: str) -> None:
            asked.append(path)

    fs = Counting("acct", blob_storage_authority="127.0.0.1:1", dfs_storage_authority="127.0.0.1:1")
    for name in ("c/a", "c/b", "c/c"):
        fs.token_checked(name)
    assert asked == ["c/a"]
    fs._token_checked_at -= 301
    fs.token_checked("c/d")
    assert asked == ["c/a", "c/d"]


def test_an_azure_container_is_shown_in_reprs_and_its_secrets_are_not() -> None:
    """The container of ``abfss://<container>@<account>...`` is a name, not user information
    to hide: reprs and shown settings keep it, while a key, a SAS token's signature and the
    password or token of another URL stay masked."""
    from icefloe.cli.render import shown_properties
    from icefloe.properties import redact_url

    sig = "c2lnbmF0dXJlLW9mLXRoZS1zYXM="
    props = {
        "warehouse": "abfss://lakehouse@myaccount.dfs.core.windows.net/wh",
        "location": f"wasbs://raw@myaccount.blob.core.windows.net/t?sv=2021&sig={sig}",
        "adls.account-key": AZURITE_KEY,
        "adls.sas-token": f"sv=2021-08-06&sig={sig}",
        "uri": "https://ghp_Pw9Qtoken@lake.internal/wh",
    }
    for text in (repr(FileIO(props)), repr(shown_properties(props))):
        assert "abfss://lakehouse@myaccount.dfs.core.windows.net/wh" in text
        assert "wasbs://raw@myaccount.blob.core.windows.net/t?sv=2021&sig=***" in text
        assert "https://***@lake.internal/wh" in text
        for secret in (sig, AZURITE_KEY, "Pw9Q"):
            assert secret not in text
    assert (
        redact_url("ABFS://c@acct.dfs.core.windows.net/x") == "ABFS://c@acct.dfs.core.windows.net/x"
    )
    assert redact_url("abfss://c:Pw9Q@acct/x") == "abfss://c:***@acct/x"  # a password still goes
