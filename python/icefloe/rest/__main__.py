"""``python -m icefloe.rest``: serve a catalog over Iceberg's REST protocol.

    python -m icefloe.rest [--catalog NAME] [--host 127.0.0.1] [--port 8181]
                           [--token-env VAR] [--client-env VAR] [--per-warehouse]
                           [--idempotency-lifetime PT30M]
                           [--table-config key=value ...] [--vend-storage-credentials]
                           [-p key=value ...]

Tokens and client secrets are read from environment variables (never from the command line,
where other users could see them): ``--token-env ICEFLOE_REST_TOKEN`` names a variable holding
the accepted bearer token, ``--client-env ICEFLOE_REST_CLIENT`` one holding ``id:secret`` for the
OAuth2 token endpoint. ``-p`` adds catalog properties (e.g. ``-p warehouse=/data/wh``).

Clients get no storage settings unless asked for: ``--table-config`` adds a setting to every
table's ``config`` (``--table-config s3.endpoint=http://...``), and
``--vend-storage-credentials`` hands the catalog's own storage credentials (its ``s3.*``,
``gcs.*`` and ``adls.*`` credential properties) to clients that send
``X-Iceberg-Access-Delegation: vended-credentials``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from icefloe.exceptions import IcebergError, MissingDependencyError

#: The storage credential properties ``--vend-storage-credentials`` hands out (a key ending in
#: ``.`` stands for every key it begins, as ``adls.sas-token.<account>``), and the location
#: prefixes they are vended for (those of the file systems that read them).
CREDENTIAL_PROPERTIES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("s3://", "s3a://", "s3n://", "oss://"),
        (
            "s3.access-key-id",
            "s3.secret-access-key",
            "s3.session-token",
            "s3.session-token-expires-at-ms",
        ),
    ),
    (("gs://", "gcs://"), ("gcs.oauth2.token", "gcs.oauth2.token-expires-at")),
    (
        ("abfs://", "abfss://", "wasb://", "wasbs://"),
        (
            "adls.account-name",
            "adls.account-key",
            "adls.sas-token",
            "adls.sas-token.",
            "adls.connection-string",
            "adls.connection-string.",
            "adls.auth.shared-key.account.name",
            "adls.auth.shared-key.account.key",
            "adls.tenant-id",
            "adls.client-id",
            "adls.client-secret",
        ),
    ),
)


def catalog_storage_credentials(
    properties: Mapping[str, str],
) -> list[tuple[str, dict[str, str]]]:
    """``(prefix, credentials)`` pairs of the storage credentials among a catalog's
    ``properties``, one per location prefix of each file system they are for."""
    out: list[tuple[str, dict[str, str]]] = []
    for prefixes, keys in CREDENTIAL_PROPERTIES:
        found = {
            k: v
            for k, v in properties.items()
            if v and (k in keys or any(p.endswith(".") and k.startswith(p) for p in keys))
        }
        if found:
            out += [(prefix, dict(found)) for prefix in prefixes]
    return out


def _pairs(parser: argparse.ArgumentParser, items: list[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments as a dict (a usage error for anything else)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


class _CannotStart(Exception):
    """The server did not start (uvicorn logged why and exited)."""


def _serve(serve: Any, *args: Any, **kwargs: Any) -> None:
    """``serve(*args, **kwargs)``; uvicorn's exit when it cannot start (its code 3, as it
    exits the process) becomes :class:`_CannotStart`."""
    try:
        serve(*args, **kwargs)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise _CannotStart() from None


def _whole(text: str, lowest: int, highest: int | None, what: str) -> int:
    """A whole number from ``lowest`` to ``highest`` (else a usage error, as argparse reports
    one that is not a number)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < lowest or (highest is not None and value > highest):
        raise argparse.ArgumentTypeError(f"{value} is not {what}")
    return value


def _positive(text: str) -> int:
    """A token lifetime: seconds above zero (one of 0 or less expires when issued)."""
    return _whole(text, 1, None, "a number of seconds above zero")


def _port(text: str) -> int:
    """A ``--port`` value: 0 (any free port) to 65535."""
    return _whole(text, 0, 65535, "a port number (0 to 65535)")


def main(argv: list[str] | None = None, prog: str = "python -m icefloe.rest") -> int:
    """Parse the command line and serve until interrupted (``icefloe serve`` calls this too)."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Serve a catalog over Iceberg's REST catalog protocol."
    )
    parser.add_argument(
        "--catalog",
        help="catalog name from ~/.icefloe.yaml (default: its default-catalog, else 'default')",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name clients use in Host besides the address's own (on a loopback address: "
        "its loopback names; elsewhere any name unless some are given), for example the "
        "name a reverse proxy forwards",
    )
    parser.add_argument("--port", type=_port, default=8181, help="TCP port (0: any free one)")
    parser.add_argument("--prefix", default="", help="path prefix advertised in /v1/config")
    parser.add_argument("--token-env", help="environment variable holding the bearer token")
    parser.add_argument("--client-env", help="environment variable holding OAuth2 id:secret")
    parser.add_argument(
        "--per-warehouse",
        action="store_true",
        help="one catalog per ?warehouse=<name> of the clients, under the catalog's warehouse",
    )
    parser.add_argument(
        "--token-lifetime",
        type=_positive,
        default=3600,
        help="seconds an OAuth2 token stays valid",
    )
    parser.add_argument(
        "--idempotency-lifetime",
        default="PT30M",
        help="how long replies to Idempotency-Key requests are kept (ISO-8601; 'none': off)",
    )
    parser.add_argument(
        "--table-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting sent in every table's config (e.g. s3.endpoint=http://...)",
    )
    parser.add_argument(
        "--vend-storage-credentials",
        action="store_true",
        help="send the catalog's s3.*/gcs.*/adls.* credentials to clients that ask for "
        "vended-credentials",
    )
    parser.add_argument("--log-level", default="info")
    parser.add_argument("-p", "--property", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    from icefloe.catalog import load_catalog
    from icefloe.rest import _require_server, serve
    from icefloe.rest.idempotency import parse_duration

    try:
        _require_server()  # before the catalog is opened (and its warehouse created)
        props = _pairs(parser, args.property, "-p")
        table_config = _pairs(parser, args.table_config, "--table-config")
        tokens = []
        if args.token_env:
            token = os.environ.get(args.token_env)
            if not token:
                parser.error(f"environment variable {args.token_env} is empty or unset")
            tokens.append(token)
        clients = {}
        if args.client_env:
            raw = os.environ.get(args.client_env, "")
            cid, sep, secret = raw.partition(":")
            if not sep or not cid or not secret:
                parser.error(f"environment variable {args.client_env} must hold id:secret")
            clients[cid] = secret
        lifetime = (
            None if args.idempotency_lifetime.lower() == "none" else args.idempotency_lifetime
        )
        if lifetime is not None:
            try:
                parse_duration(lifetime)
            except ValueError as exc:
                parser.error(str(exc))
        catalog = load_catalog(args.catalog, **props)
        vended: list[tuple[str, dict[str, str]]] = []
        if args.vend_storage_credentials:
            vended = catalog_storage_credentials(catalog.properties)
            if not vended:
                parser.error(
                    "--vend-storage-credentials: the catalog has no s3.*, gcs.* or adls.* "
                    "credential properties to vend"
                )
        _serve(
            serve,
            catalog,
            args.host,
            args.port,
            tokens=tokens,
            clients=clients,
            token_lifetime_s=args.token_lifetime,
            prefix=args.prefix,
            per_warehouse=args.per_warehouse,
            idempotency_lifetime=lifetime,
            table_config=table_config,
            storage_credentials=vended,
            log_level=args.log_level,
            allowed_hosts=args.allowed_host,
        )
    except MissingDependencyError as exc:  # not bad input: the command cannot run here
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except IcebergError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except _CannotStart:  # uvicorn said why (address in use, ...): the command cannot run here
        return 1
    except SystemExit as exc:  # usage errors found while setting up (parser.error)
        return exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:  # a database or file system the catalog cannot open
        print(f"{prog}: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
