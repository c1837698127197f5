"""Server-side scan planning from the client: scans of a table the server plans.

A table is planned by the server when its load answer's ``config`` says
``scan-planning-mode: server``, or, without that, the catalog property says so (the server's
word wins, as in Iceberg Java); the server must offer ``POST .../plan``. The scan sends its
snapshot (for time travel and refs), filter (bound, in the REST expression JSON), case
sensitivity and selected columns; the answer is followed to the end: ``completed`` at once,
``submitted`` polled (``GET .../plan/{plan-id}``, backing off from one second to a minute,
for at most ``rest-scan-planning.poll-timeout-ms``, five minutes by default), each plan task
fetched (``POST .../tasks``). A plan that fails or is cancelled raises; a plan with an id is
cancelled on the server once read or abandoned (an error while following it), when the server
offers that, so that it can drop the plan's state, as Iceberg Java's client does.
Storage credentials in the answer serve the scan's reads.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.catalog.base import Identifier
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.client import RestClient
from icefloe.catalog.rest.errors import exception_for_error
from icefloe.catalog.rest.wire import storage_credentials_from_json
from icefloe.exceptions import ScanPlanningError, UnsupportedFeatureError, ValidationError
from icefloe.expressions.base import (
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Or,
    Predicate,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.rest_json import expression_from_json, expression_to_json
from icefloe.expressions.rewrite import rewrite_not
from icefloe.scan.content_json import data_file_from_json, delete_file_from_json
from icefloe.scan.tasks import FileScanTask

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.table import Table
    from icefloe.table.scan import TableScan
    from icefloe.types import IcebergType

__all__ = ["PLANNING_MODE", "RestScanPlanning", "ServerPlan"]

#: Catalog property and table config key: ``client`` (the default) or ``server``.
PLANNING_MODE = "scan-planning-mode"
POLL_TIMEOUT = "rest-scan-planning.poll-timeout-ms"
_MIN_SLEEP_S, _MAX_SLEEP_S = 1.0, 60.0


@dataclass
class ServerPlan:
    """The tasks of a scan the server planned, and the FileIO to read them with (None: the
    table's)."""

    tasks: list[FileScanTask]
    io: FileIO | None = None


def _mode(value: str, where: str) -> str:
    mode = value.strip().lower()
    if mode not in ("client", "server"):
        raise ValidationError(
            f"{PLANNING_MODE} must be 'client' or 'server', got {value!r} ({where})"
        )
    return mode


class RestScanPlanning(RestClient):
    """Scans planned by the server (see the module docstring)."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        self._planning_modes: dict[Identifier, str] = {}  # from the tables' load configs

    def _remember_planning_mode(self, ident: Identifier, config: dict[str, str]) -> None:
        """Records the table's ``scan-planning-mode`` from its load answer's config."""
        if PLANNING_MODE in config:
            where = f"the config of table {'.'.join(ident)}"
            self._planning_modes[ident] = _mode(config[PLANNING_MODE], where)
        else:
            self._planning_modes.pop(ident, None)

    def plans_on_server(self, ident: Identifier) -> bool:
        """Whether scans of table ``ident`` are planned by the server."""
        mode = self._planning_modes.get(tuple(ident))
        if mode is None:
            mode = _mode(self.properties.get(PLANNING_MODE, "client"), "catalog property")
        if mode != "server":
            return False
        if ep.PLAN_TABLE_SCAN not in self.endpoints:
            raise UnsupportedFeatureError(
                f"table {'.'.join(ident)} is to be planned by the server, which does not offer "
                f"{ep.PLAN_TABLE_SCAN}"
            )
        return True

    def plan_scan(self, table: Table, scan: TableScan) -> ServerPlan | None:
        """The server's plan of ``scan``, or None when the table is planned by the client."""
        ident = tuple(table.identifier)
        if not self.plans_on_server(ident):
            return None
        snap = scan.snapshot()
        if snap is None:
            return ServerPlan([])
        request: dict[str, Any] = {"case-sensitive": scan.case_sensitive}
        if scan.snapshot_id is not None or scan.as_of is not None or scan.ref is not None:
            request["snapshot-id"] = snap.snapshot_id
            ref = table.metadata.refs.get(scan.ref) if scan.ref is not None else None
            request["use-snapshot-schema"] = ref is None or not ref.is_branch
        bound = scan.bound_filter()
        sent = without_spatial(bound)
        if sent is not AlwaysTrue():
            try:
                request["filter"] = expression_to_json(sent)
            except ValidationError as exc:
                raise UnsupportedFeatureError(f"the server cannot plan this filter: {exc}") from exc
        names = scan._data_names()
        if "*" not in names:
            request["select"] = list(names)
        # the server's residuals are of the filter it was sent: without the spatial part,
        # every task keeps the whole filter instead
        return _Follow(self, ident, scan, server_residuals=sent == bound).run(request)


def without_spatial(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` with its ``st_intersects`` / ``st_disjoint`` parts (which the REST expression
    JSON cannot express) taken as true: a weaker filter, so the server plans every file the
    whole filter may match, which the client then applies to the rows."""
    if isinstance(expr, And | Or):
        left, right = without_spatial(expr.left), without_spatial(expr.right)
        if left is expr.left and right is expr.right:
            return expr
        return type(expr)(left, right)
    if isinstance(expr, Not):
        child = without_spatial(expr.child)
        return expr if child is expr.child else AlwaysTrue()
    if isinstance(expr, Predicate) and expr.op.is_spatial:
        return AlwaysTrue()
    return expr


class _Follow:
    """One plan followed from its request to its last task."""

    def __init__(
        self,
        client: RestScanPlanning,
        ident: Identifier,
        scan: TableScan,
        server_residuals: bool = True,
    ) -> None:
        self.client, self.ident, self.scan = client, ident, scan
        self.server_residuals = server_residuals
        self.path = client._table_path(ident)
        self.what = f"plan a scan of {'.'.join(ident)!r}"
        md = scan.metadata
        schema = md.current_schema()
        self.types: dict[int, list[IcebergType]] = {
            s.spec_id: [f.field_type for f in s.partition_type(schema, md.schemas).fields]
            for s in md.partition_specs
        }
        self.schema = scan.schema()
        self.default_residual = scan.bound_filter()
        self.residuals: dict[str, BooleanExpression] = {}
        self.tasks: list[FileScanTask] = []
        self.plan_id: str | None = None

    def run(self, request: dict[str, Any]) -> ServerPlan:
        resp = self.client._call("POST", f"{self.path}/plan", self.what, ok=(200,), body=request)
        answer = _object(resp.json(), "the plan answer")
        self.plan_id = answer.get("plan-id") if isinstance(answer.get("plan-id"), str) else None
        try:
            answer = self._completed(answer)
            io = self._io(answer)
            pending = list(self._take(answer))
            while pending:
                self.client._require(ep.FETCH_SCAN_TASKS)
                token = pending.pop(0)
                got = self.client._call(
                    "POST",
                    f"{self.path}/tasks",
                    f"fetch the scan tasks of a plan of {'.'.join(self.ident)!r}",
                    ok=(200,),
                    body={"plan-task": token},
                )
                pending.extend(self._take(_object(got.json(), "the scan tasks answer")))
        finally:
            # done with or abandoned: the server can drop the plan's state (as Java's client
            # cancels every plan it has read)
            self._cancel()
        return ServerPlan(self.tasks, io)

    def _completed(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The answer once the plan completed: polled while ``submitted``."""
        timeout_ms = self.client.properties.get(POLL_TIMEOUT, "300000")
        try:
            deadline = time.monotonic() + int(timeout_ms) / 1000
        except ValueError:
            raise ValidationError(
                f"{POLL_TIMEOUT} must be an integer, got {timeout_ms!r}"
            ) from None
        sleep = _MIN_SLEEP_S
        while True:
            status = answer.get("status")
            if status == "completed":
                return answer
            if status == "failed":
                raw_err = answer.get("error")
                err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {}
                code = err["code"] if isinstance(err.get("code"), int) else 500
                raise exception_for_error(
                    code,
                    json.dumps({"error": err}).encode(),
                    f"{self.what} (planning failed)",
                    secrets=self.client._secrets(),
                )
            if status == "cancelled":
                raise ScanPlanningError(f"{self.what}: the server cancelled the plan")
            if status != "submitted" or self.plan_id is None:
                raise ValidationError(f"{self.what}: unexpected plan status {status!r}")
            self.client._require(ep.FETCH_PLAN)
            if time.monotonic() + sleep > deadline:
                raise ScanPlanningError(
                    f"{self.what}: the plan did not complete within {timeout_ms} ms "
                    f"({POLL_TIMEOUT})"
                )
            time.sleep(sleep)
            sleep = min(sleep * 2, _MAX_SLEEP_S)
            got = self.client._call(
                "GET", f"{self.path}/plan/{ep.encode_name(self.plan_id)}", self.what, ok=(200,)
            )
            answer = _object(got.json(), "the plan answer")

    def _take(self, answer: dict[str, Any]) -> list[str]:
        """Adds the answer's file scan tasks; returns its plan tasks."""
        deletes_raw = answer.get("delete-files") or []
        tasks_raw = answer.get("file-scan-tasks") or []
        if not isinstance(deletes_raw, list) or not isinstance(tasks_raw, list):
            raise ValidationError(f"{self.what}: malformed file-scan-tasks or delete-files")
        deletes = [delete_file_from_json(d, self.types) for d in deletes_raw]
        for raw in tasks_raw:
            task = _object(raw, "a file scan task")
            data = data_file_from_json(task.get("data-file"), self.types)
            refs = task.get("delete-file-references") or []
            if not isinstance(refs, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(deletes)
                for i in refs
            ):
                raise ValidationError(f"{self.what}: bad delete-file-references {refs!r}")
            residual = (
                self._residual(task["residual-filter"])
                if "residual-filter" in task and self.server_residuals
                else self.default_residual
            )
            self.tasks.append(
                FileScanTask(
                    data,
                    [deletes[i] for i in refs],
                    residual=residual,
                    spec_id=data.spec_id,
                )
            )
        plan_tasks = answer.get("plan-tasks") or []
        if not isinstance(plan_tasks, list) or not all(isinstance(t, str) for t in plan_tasks):
            raise ValidationError(f"{self.what}: malformed plan-tasks")
        return list(plan_tasks)

    def _residual(self, raw: Any) -> BooleanExpression:
        key = json.dumps(raw, sort_keys=True)
        found = self.residuals.get(key)
        if found is None:
            cs = self.scan.case_sensitive
            expr = expression_from_json(raw, [self.schema], cs)
            found = self.residuals[key] = rewrite_not(bind(self.schema, expr, cs))
        return found

    def _io(self, answer: dict[str, Any]) -> FileIO | None:
        raw = answer.get("storage-credentials")
        if not raw:
            return None
        from icefloe.io import FileIO

        creds = storage_credentials_from_json(raw)
        return FileIO(dict(self.scan.table.io.properties), storage_credentials=creds)

    def _cancel(self) -> None:
        """Best effort: tell the server the plan can go."""
        if self.plan_id is None or ep.CANCEL_PLAN not in self.client.endpoints:
            return
        with contextlib.suppress(Exception):  # the plan's own error is the one to report
            self.client._send("DELETE", f"{self.path}/plan/{ep.encode_name(self.plan_id)}")


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError(f"{what} is not a JSON object")
    return value
