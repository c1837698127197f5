"""``icefloe serve``: an Iceberg REST catalog server over any icefloe catalog.

:func:`create_app` builds the ASGI app (Starlette) for embedding; :func:`serve` runs it with
uvicorn until interrupted; :func:`start` runs it in a background thread of this process. They
need the ``server`` extra (``pip install 'icefloe[server]'``); without it they raise
:class:`~icefloe.exceptions.MissingDependencyError`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icefloe.exceptions import MissingDependencyError, ValidationError
from icefloe.rest.browsers import allowed_hosts_for

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from icefloe.catalog import Catalog

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "BackgroundServer", "create_app", "serve", "start"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8181


def _require_server(what: str = "icefloe's REST server", *, uvicorn: bool = True) -> None:
    """Raise :class:`~icefloe.exceptions.MissingDependencyError` naming the ``server`` extra
    unless Starlette (and uvicorn, with ``uvicorn``) can be imported; ``what`` names the
    feature in the message."""
    import importlib

    for module in ("starlette", "uvicorn") if uvicorn else ("starlette",):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingDependencyError.install(
                f"{what} needs Starlette and uvicorn ({exc})", "server", name=exc.name or module
            ) from exc


def create_app(catalog: Catalog, **options: object) -> Starlette:
    """The ASGI app serving ``catalog`` (options: see :func:`icefloe.rest.app.create_app`)."""
    _require_server(uvicorn=False)
    from icefloe.rest.app import create_app as _create

    return _create(catalog, **options)  # type: ignore[arg-type]


def serve(
    catalog: str | Catalog | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    tokens: list[str] | tuple[str, ...] = (),
    clients: Mapping[str, str] | None = None,
    token_lifetime_s: int = 3600,
    prefix: str = "",
    idempotency_lifetime: str | None = "PT30M",
    table_config: Mapping[str, str] | None = None,
    storage_credentials: Sequence[tuple[str, Mapping[str, str]]] = (),
    per_warehouse: bool = False,
    log_level: str = "info",
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve a catalog (a name for :func:`~icefloe.catalog.load_catalog`, a catalog, or the
    default catalog) on ``host:port`` until SIGINT/SIGTERM, then shut down gracefully.

    With ``per_warehouse`` each ``?warehouse=<name>`` of a client gets a catalog of its own
    (see :func:`icefloe.rest.app.warehouse_catalogs`). On a loopback ``host`` only requests
    naming a loopback name or one of ``allowed_hosts`` in ``Host`` are answered (a web page
    rebinding its DNS name to this address is refused); elsewhere ``allowed_hosts``, when
    given, limit the names (see :func:`icefloe.rest.browsers.allowed_hosts_for`)."""
    _require_server()
    import uvicorn

    from icefloe.catalog import Catalog, load_catalog

    cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    warehouses = None
    if per_warehouse:
        from icefloe.rest.app import warehouse_catalogs

        warehouses = warehouse_catalogs(cat)
    app = create_app(
        cat,
        warehouses=warehouses,
        tokens=tokens,
        clients=clients,
        token_lifetime_s=token_lifetime_s,
        prefix=prefix,
        idempotency_lifetime=idempotency_lifetime,
        table_config=table_config,
        storage_credentials=storage_credentials,
        allowed_hosts=allowed_hosts_for(host, allowed_hosts),
    )
    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        raise ValidationError(f"unknown log level {log_level!r}")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("icefloe.rest").setLevel(level)
    auth = "bearer token" if tokens or clients else "no auth"

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            bound = port  # the port the system chose for port 0
            with contextlib.suppress(AttributeError, IndexError, OSError):
                bound = self.servers[0].sockets[0].getsockname()[1]
            logging.getLogger("icefloe.rest").info(
                "serving catalog %r (%s) on http://%s:%d with %s",
                cat.name,
                type(cat).__name__,
                host,
                bound,
                auth,
            )

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,
        log_level=log_level.lower(),
        log_config=None,
    )
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again: that
    # is the stop asked for, not a failure (no "Aborted!", exit 0)
    with _sigterm_raises(), contextlib.suppress(KeyboardInterrupt, _Terminated):
        Server(config).run()


class _Terminated(Exception):
    """SIGTERM was received."""


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`_Terminated` meanwhile (in the main thread; elsewhere signals
    cannot be handled and nothing changes)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: Any) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class BackgroundServer:
    """A server running in a daemon thread of this process: :attr:`url`, :meth:`stop`."""

    def __init__(self, app: Starlette, host: str, port: int) -> None:
        import socket
        import threading
        import time

        _require_server()
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        self.url = f"http://{host}:{sock.getsockname()[1]}"
        config = uvicorn.Config(app, access_log=False, log_level="warning", log_config=None)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ValidationError(f"the REST server on {self.url} did not start")
            time.sleep(0.01)

    def __repr__(self) -> str:
        return f"BackgroundServer({self.url})"

    def stop(self) -> None:
        """Finish the requests in flight and stop."""
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(
    catalog: Catalog, host: str = DEFAULT_HOST, port: int = 0, **options: object
) -> BackgroundServer:
    """Serve ``catalog`` from a background thread (``port`` 0: any free port; see
    :attr:`BackgroundServer.url`); options as for :func:`icefloe.rest.app.create_app`, whose
    ``allowed_hosts`` are by default :func:`~icefloe.rest.browsers.allowed_hosts_for` ``host``
    (as :func:`serve` has them)."""
    options.setdefault("allowed_hosts", allowed_hosts_for(host))
    return BackgroundServer(create_app(catalog, **options), host, port)
