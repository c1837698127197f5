"""Iceberg Java's ``jdbc.*`` catalog properties for the SQL catalog.

Iceberg Java's JDBC catalog hands every ``jdbc.``-prefixed property, prefix removed, to the
JDBC driver. For PostgreSQL that is pgjdbc, whose connection properties are read here as
libpq's (psycopg's connection arguments), so a configuration shared with Java connects the same
way: ``jdbc.sslmode=require`` requires TLS here too. A ``jdbc.*`` key icefloe cannot apply is
refused (:class:`ValidationError`, naming the key, never its value) when it bears on security
or on which database or schema is used; a key that only tunes the Java driver is ignored with
one warning naming it. A SQLite catalog reads no driver setting (sqlite-jdbc's are pragmas and
tuning of Java's driver; the file is named by ``uri``), and warns once about each it ignores.

Settings given in the URI's query win over ``jdbc.*`` ones (as pgjdbc lets its URL's
parameters win over its properties), and icefloe's own ``connect-timeout`` wins over
``jdbc.connectTimeout`` and ``jdbc.loginTimeout``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.properties import parse_seconds

__all__ = ["CATALOG_KEYS", "create_tables", "postgres_connect_args", "warn_sqlite_keys"]

_log = logging.getLogger(__name__)

#: ``jdbc.*`` properties that are settings of the catalog (Iceberg Java's or icefloe's), not of
#: the driver: ``user`` and ``password`` log in, ``socketTimeout`` is the request timeout,
#: ``init-catalog-tables`` is read by :func:`create_tables`; ``schema-version`` and
#: ``strict-mode`` concern Java's own handling of the tables (icefloe uses tables with or
#: without the ``iceberg_type`` column as they are).
CATALOG_KEYS = frozenset(
    {"user", "password", "socketTimeout", "schema-version", "strict-mode", "init-catalog-tables"}
)

_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_GSSENCMODES = ("disable", "allow", "prefer", "require")
_CHANNEL_BINDING = ("disable", "prefer", "require")
#: pgjdbc's ``targetServerType`` as libpq's ``target_session_attrs``.
_TARGET = {
    "any": "any",
    "primary": "primary",
    "master": "primary",
    "secondary": "standby",
    "prefersecondary": "prefer-standby",
}
#: pgjdbc properties that are the libpq setting of the same meaning under another name (or
#: the same), value passed as it is.
_RENAMED = {
    "sslrootcert": "sslrootcert",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "sslpassword": "sslpassword",
    "ApplicationName": "application_name",
    "kerberosServerName": "krbsrvname",
    "service": "service",
}
#: pgjdbc properties that only tune the Java driver (statements, fetching, buffers, logging):
#: nothing libpq would do differently for the catalog's few statements.
_TUNING = frozenset(
    {
        "adaptiveFetch",
        "adaptiveFetchMaximum",
        "adaptiveFetchMinimum",
        "allowEncodingChanges",
        "assumeMinServerVersion",
        "autosave",
        "binaryTransfer",
        "binaryTransferDisable",
        "binaryTransferEnable",
        "cancelSignalTimeout",
        "cleanupSavepoints",
        "databaseMetadataCacheFields",
        "databaseMetadataCacheFieldsMiB",
        "defaultRowFetchSize",
        "disableColumnSanitiser",
        "escapeSyntaxCallMode",
        "groupStartupParameters",
        "hideUnprivilegedObjects",
        "hostRecheckSeconds",
        "logServerErrorDetail",
        "logUnclosedConnections",
        "loggerFile",
        "loggerLevel",
        "maxResultBuffer",
        "maxSendBufferSize",
        "preferQueryMode",
        "prepareThreshold",
        "preparedStatementCacheQueries",
        "preparedStatementCacheSizeMiB",
        "quoteReturningIdentifiers",
        "readOnlyMode",
        "reWriteBatchedInserts",
        "receiveBufferSize",
        "sendBufferSize",
        "sslResponseTimeout",
        "stringtype",
        "tcpNoDelay",
        "unknownLength",
    }
)
#: Words in the name of a driver setting that bears on security (TLS, Kerberos/GSSAPI, log-in)
#: or on which server, database or schema is used: such a key icefloe cannot apply is refused.
_SENSITIVE = re.compile(
    r"ssl|tls|gss|kerberos|krb|jaas|spnego|sspi|auth|cert|key|passw|secret|token|credential|"
    r"socketfactory|channel|host|port|dbname|database|schema|service|target|balance|user",
    re.IGNORECASE,
)

#: Keys already warned about (once per process each).
_WARNED: set[str] = set()


def create_tables(properties: Mapping[str, str]) -> bool:
    """Whether the catalog creates its two tables when they are missing: icefloe's
    ``init_catalog_tables``, else Iceberg Java's ``jdbc.init-catalog-tables`` (default true)."""
    raw = properties.get("init_catalog_tables", properties.get("jdbc.init-catalog-tables", "true"))
    return raw.strip().lower() == "true"


def _driver_keys(properties: Mapping[str, str]) -> dict[str, str]:
    return {
        key[len("jdbc.") :]: value
        for key, value in properties.items()
        if key.startswith("jdbc.") and key[len("jdbc.") :] not in CATALOG_KEYS
    }


def _warn(name: str, key: str, why: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        _log.warning("SQL catalog %r: 'jdbc.%s' is not read by icefloe (%s)", name, key, why)


def _choice(name: str, key: str, value: str, allowed: tuple[str, ...]) -> str:
    low = value.strip().lower()
    if low not in allowed:
        raise ValidationError(
            f"SQL catalog {name!r}: 'jdbc.{key}' must be one of {', '.join(allowed)}"
        )
    return low


def _flag(name: str, key: str, value: str) -> bool:
    return _choice(name, key, value, ("true", "false")) == "true"


def _options_value(text: str) -> str:
    """``text`` as one word of libpq's ``options`` (spaces and backslashes escaped)."""
    return text.replace("\\", "\\\\").replace(" ", "\\ ")


def postgres_connect_args(
    name: str, properties: Mapping[str, str], query: Mapping[str, Any]
) -> dict[str, Any]:
    """psycopg's connection arguments for a PostgreSQL catalog: pgjdbc's settings among the
    ``jdbc.*`` properties as libpq's, and the time allowed to open a connection; a setting in
    the URI's ``query`` is left to the URI."""
    args: dict[str, Any] = {}
    options: list[str] = []
    # pgjdbc's defaults: 10 s to open the socket, no limit on the whole log-in; 0 is none
    timeouts: dict[str, float] = {"connectTimeout": 10.0, "loginTimeout": 0.0}
    for key, value in sorted(_driver_keys(properties).items()):
        if key in _RENAMED:
            args[_RENAMED[key]] = value
        elif key == "sslmode":
            args["sslmode"] = _choice(name, key, value, _SSLMODES)
        elif key == "ssl":
            # pgjdbc: ssl=true (or an empty value) without sslmode is verify-full; false is
            # its default, prefer
            if value.strip() == "" or _flag(name, key, value):
                args.setdefault("sslmode", "verify-full")
        elif key == "gssEncMode":
            args["gssencmode"] = _choice(name, key, value, _GSSENCMODES)
        elif key == "channelBinding":
            args["channel_binding"] = _choice(name, key, value, _CHANNEL_BINDING)
        elif key in ("connectTimeout", "loginTimeout"):
            zero = value.strip() in ("0", "0.0")
            timeouts[key] = 0.0 if zero else parse_seconds(f"jdbc.{key}", value)
        elif key == "tcpKeepAlive":
            args["keepalives"] = 1 if _flag(name, key, value) else 0
        elif key == "targetServerType":
            target = _TARGET.get(value.strip().lower())
            if target is None:
                raise ValidationError(
                    f"SQL catalog {name!r}: 'jdbc.{key}' must be one of any, primary, "
                    "secondary or preferSecondary (libpq has no preferPrimary)"
                )
            args["target_session_attrs"] = target
        elif key == "loadBalanceHosts":
            args["load_balance_hosts"] = "random" if _flag(name, key, value) else "disable"
        elif key == "options":
            options.insert(0, value)
        elif key == "currentSchema":
            # pgjdbc sets the search path: the catalog's tables are found and created in the
            # first schema of it (as Iceberg Java's)
            options.append(f"-c search_path={_options_value(value)}")
        elif key == "readOnly":
            if _flag(name, key, value):
                options.append("-c default_transaction_read_only=on")
        elif key in _TUNING:
            _warn(name, key, "it tunes the Java driver only")
        elif _SENSITIVE.search(key):
            raise ValidationError(
                f"SQL catalog {name!r}: 'jdbc.{key}' is a PostgreSQL JDBC driver setting "
                "icefloe cannot apply, and it bears on security or on which database is used; "
                "icefloe will not connect without it (give its libpq equivalent in 'uri', or "
                "see the user guide for the jdbc.* settings read)"
            )
        else:
            _warn(name, key, "icefloe does not know it as a setting that changes the connection")
    if options:
        if "options" in query:  # (the URI's would replace them, search path and all)
            raise ValidationError(
                f"SQL catalog {name!r}: 'jdbc.options', 'jdbc.currentSchema' and "
                "'jdbc.readOnly' cannot be combined with an 'options' setting in 'uri'"
            )
        args["options"] = " ".join(options)
    limits = [t for t in timeouts.values() if t > 0]
    if "connect-timeout" in properties:
        seconds = parse_seconds("connect-timeout", properties["connect-timeout"])
        args["connect_timeout"] = max(1, round(seconds))
    elif limits:
        # (a host that accepts connections and never answers would otherwise block every
        # call for libpq's two minutes)
        args["connect_timeout"] = max(1, round(min(limits)))
    return {key: value for key, value in args.items() if key not in query}


def warn_sqlite_keys(name: str, properties: Mapping[str, str]) -> None:
    """A SQLite catalog applies none of sqlite-jdbc's settings (pragmas and tuning of Java's
    driver): one warning for each."""
    for key in sorted(_driver_keys(properties)):
        _warn(name, key, "a SQLite catalog reads no JDBC driver setting")
