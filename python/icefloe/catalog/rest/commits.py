"""Commits of the REST catalog (single table and ``POST /transactions/commit``) and its
metrics reports; the retry rules are in the docstring of :mod:`icefloe.catalog.rest.catalog`.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.catalog.base import Identifier
from icefloe.catalog.commit import check_updates_fit
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.errors import UNKNOWN_OUTCOME_STATUS, is_error_response
from icefloe.catalog.rest.http import TransportError
from icefloe.catalog.rest.metrics import commit_report, scan_report
from icefloe.catalog.rest.tables import RestTables
from icefloe.catalog.rest.wire import (
    LoadTableResult,
    creation_updates,
    identifier_to_json,
    uuid7,
)
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    TableAlreadyExistsError,
)
from icefloe.metadata import (
    AddSnapshot,
    AssertCreate,
    TableMetadata,
    TableRequirement,
    TableUpdate,
    validate_requirements,
)
from icefloe.table.committer import CommitResult, RetryPolicy

if TYPE_CHECKING:
    from icefloe.scan.metrics import ScanReport
    from icefloe.table import Table

__all__ = ["RestCommits"]

log = logging.getLogger("icefloe.catalog.rest")

#: Metrics reports queued but not yet sent, at most (more are dropped).
MAX_PENDING_REPORTS = 1000
#: A metrics thread with no report for this long ends.
REPORT_IDLE_SECONDS = 5.0


class RestCommits(RestTables):
    """Commits and metrics reports over REST."""

    def commit_table(
        self,
        table: Table,
        requirements: Iterable[TableRequirement],
        updates: Iterable[TableUpdate],
    ) -> CommitResult:
        """Send requirements and updates to the server (see the module docstring for retries).

        A table from :meth:`create_table_transaction` (no metadata file yet) is created by
        this commit: ``assert-create`` plus the updates that make it, then ``updates``.
        """
        self._require(ep.UPDATE_TABLE)
        ident = table.identifier
        reqs = list(requirements)
        ups = list(updates)
        staged = not table.metadata_location
        if staged:
            reqs = [AssertCreate()]
            ups = creation_updates(table.metadata) + ups
        policy = RetryPolicy.from_properties(table.metadata.properties)
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        body = {
            "identifier": identifier_to_json(ident),
            "requirements": [r.to_json() for r in reqs],
            "updates": [u.to_json() for u in ups],
        }
        path = self._table_path(ident)
        what = f"commit to table {'.'.join(ident)!r}"
        key = uuid7() if self.idempotency_lifetime else None
        attempt = 0
        started = time.perf_counter_ns()
        uncertain = False  # an earlier attempt may have committed
        failure = ""
        try:
            while True:
                headers = {"Idempotency-Key": key} if key else {}
                try:
                    resp = self._send("POST", path, body=body, headers=headers)
                except TransportError as exc:
                    if not exc.maybe_sent and not uncertain:
                        raise CommitFailedError(f"{what}: {exc}") from exc
                    resp = None
                    failure = str(exc)
                if resp is not None and resp.status == 200:
                    try:
                        result = LoadTableResult.from_json(resp.json())
                    except Exception as exc:  # an answer that cannot be read (a proxy's error page)
                        # HTTP 200 says the server committed, its body says nothing: a resend
                        # with the same key gets the server's stored answer; else only the
                        # table's state can tell, and until it does nothing may be deleted.
                        unreadable = f"HTTP 200 with an unreadable answer: {type(exc).__name__}"
                        if key is None or _is_json(resp.body):  # the server's: it stays so
                            done = self._committed(ident, ups)
                            if done is not None:
                                return done
                            raise CommitStateUnknownError(
                                f"{what}: the outcome is unknown ({unreadable}); no file was "
                                "deleted"
                            ) from exc
                        failure = unreadable
                        resp = None  # resent below with the same key, as a lost answer
                if resp is not None and resp.status == 200:
                    with self._etag_lock:
                        self._etags.pop(ident, None)
                    if staged and (result.config or result.storage_credentials):
                        # a server that answers the create with storage settings: use them; else
                        # the table keeps those vended with the staged create
                        table.io = self._result_io(ident, result)
                    self._report_commit(ident, ups, result.metadata, attempt + 1, started)
                    return CommitResult(result.metadata, result.metadata_location or "")
                if resp is not None and resp.status == 409 and is_error_response(resp.body):
                    if uncertain:
                        # A retry after an unknown outcome may conflict with our own first attempt:
                        # rebuilding now could apply the same change twice.
                        done = self._committed(ident, ups)
                        if done is not None:
                            return done
                        if not _adds_snapshots(ups):  # the first attempt cannot be recognised
                            raise CommitStateUnknownError(
                                f"{what}: the outcome is unknown ({failure}, then a conflict that "
                                "may be with the first attempt); no file was deleted"
                            )
                        uncertain = False  # the table lacks our snapshots: it did not commit
                    if staged:  # assert-create failed: another writer created the table
                        raise TableAlreadyExistsError(
                            f"table {'.'.join(ident)!r} already exists"
                        ) from self._error(resp, what)
                    attempt += 1
                    wait = policy.wait_ms(attempt) / 1000.0
                    if attempt > policy.num_retries or time.monotonic() + wait > deadline:
                        raise self._error(resp, what)
                    fresh = self._load_result(ident, "all").metadata
                    try:
                        validate_requirements(reqs, fresh)
                    except CommitFailedError as exc:
                        raise CommitConflictError(
                            f"{what} conflicts with the table's current state: {exc}"
                        ) from exc
                    check_updates_fit(fresh, ups)
                    time.sleep(wait)
                    key = uuid7() if self.idempotency_lifetime else None  # a 409 is final per key
                    continue
                if resp is None or _unknown_outcome(resp.status, resp.body):
                    if resp is not None:
                        failure = str(self._error(resp, what))
                    uncertain = True
                    attempt += 1
                    wait = policy.wait_ms(attempt) / 1000.0
                    if (
                        key is not None
                        and attempt <= policy.num_retries
                        # total-timeout ends the retries once one was made, as Java's Tasks
                        and not (attempt > 1 and time.monotonic() + wait > deadline)
                    ):
                        time.sleep(wait)
                        continue  # the same key: the server replays the first outcome if any
                    done = self._committed(ident, ups)
                    if done is not None:
                        return done
                    raise CommitStateUnknownError(
                        f"{what}: the outcome is unknown ({failure}); no file was deleted"
                    )
                raise self._error(resp, what)
        except Exception as exc:
            if not uncertain or isinstance(exc, CommitStateUnknownError):
                raise
            # An earlier attempt may have committed: whatever failed since (a gateway's 400, a
            # token refresh answered with an error page, the table renamed or dropped) proves
            # nothing, and an error that says the commit did not happen would let its files go.
            done = self._committed(ident, ups)
            if done is not None:
                return done
            raise CommitStateUnknownError(
                f"{what}: the outcome is unknown ({failure}, then: {exc}); no file was deleted"
            ) from exc

    def _report_commit(
        self,
        ident: Identifier,
        updates: list[TableUpdate],
        metadata: TableMetadata,
        attempts: int,
        started_ns: int,
    ) -> None:
        """Send a commit report for the snapshots the commit added; never raises."""
        if not self._metrics_enabled or ep.REPORT_METRICS not in self.endpoints:
            return
        added = [u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshot)]
        if not added:
            return
        snapshot = metadata.snapshot_by_id(added[-1])
        if snapshot is None:
            return
        duration = time.perf_counter_ns() - started_ns
        name = ".".join(ident)
        self._post_report(ident, lambda: commit_report(name, snapshot, attempts, duration))

    def report_scan(self, table: Table, report: ScanReport) -> None:
        """Send a scan report for a scan planned on ``table``; never raises."""
        if not self._metrics_enabled or ep.REPORT_METRICS not in self.endpoints:
            return
        if not table.metadata_location:  # a staged create: the table does not exist yet
            return
        ident = table.identifier
        self._post_report(ident, lambda: scan_report(".".join(ident), report))

    def _post_report(self, ident: Identifier, build: Callable[[], dict[str, Any]]) -> None:
        """Queue a metrics report for the background sender; never raises, never waits.

        The report is built now; it is sent by one thread of this catalog (reports of one
        catalog go out in order) and counted as sent or failed when done. Beyond
        :data:`MAX_PENDING_REPORTS` unsent reports new ones are dropped (counted as failed).
        """
        try:
            self._queue_report(ident, build())
        except Exception as exc:  # a report must never fail the user's operation
            log.debug("metrics report for %s failed: %s", ".".join(ident), type(exc).__name__)
            with self._reports_done:
                self.metrics_reports_failed += 1

    def _queue_report(self, ident: Identifier, body: dict[str, Any]) -> None:
        with self._reports_done:
            if self._reports_pending >= MAX_PENDING_REPORTS:
                self.metrics_reports_failed += 1
                return
            self._reports_pending += 1
            if self._reporter is None:
                # a daemon thread: reports still queued when the process exits are dropped
                self._reporter = threading.Thread(
                    target=self._report_loop, name="icefloe-rest-metrics", daemon=True
                )
                self._reporter.start()
        self._report_queue.put((ident, body))

    def _report_loop(self) -> None:
        """Sends queued reports; ends after :data:`REPORT_IDLE_SECONDS` without any, so a
        catalog dropped without ``close()`` is not kept alive by its thread (the next report
        starts another)."""
        while True:
            try:
                item = self._report_queue.get(timeout=REPORT_IDLE_SECONDS)
            except queue.Empty:
                with self._reports_done:
                    if self._reports_pending == 0:  # none queued: a new one starts a thread
                        self._reporter = None
                        return
                continue
            if item is None:
                return
            self._send_report(*item)

    def _send_report(self, ident: Identifier, body: dict[str, Any]) -> None:
        try:
            resp = self._send("POST", f"{self._table_path(ident)}/metrics", body=body)
            ok = resp.status in (200, 204)
        except Exception as exc:
            log.debug("metrics report for %s failed: %s", ".".join(ident), type(exc).__name__)
            ok = False
        self._report_done(ok)

    def _report_done(self, ok: bool) -> None:
        with self._reports_done:
            if ok:
                self.metrics_reports_sent += 1
            else:
                self.metrics_reports_failed += 1
            self._reports_pending = max(0, self._reports_pending - 1)
            self._reports_done.notify_all()

    def flush_reports(self, timeout: float = 30.0) -> bool:
        """Wait until every queued metrics report was sent or failed (False: timed out)."""
        with self._reports_done:
            return self._reports_done.wait_for(lambda: self._reports_pending == 0, timeout)

    def close(self) -> None:
        """Send the queued metrics reports (waiting up to 5 s), then close the connections."""
        self.flush_reports(5.0)
        with self._reports_done:
            reporter, self._reporter = self._reporter, None
        if reporter is not None:
            self._report_queue.put(None)
        super().close()

    def _committed(self, ident: Identifier, updates: list[TableUpdate]) -> CommitResult | None:
        """After an unknown outcome: the table's state if it shows our new snapshots, else None.

        Only a commit that adds snapshots can be recognised; every other outcome stays unknown.
        """
        added = _adds_snapshots(updates)
        if not added:
            return None
        try:
            fresh = self._load_result(ident, "all")
        except Exception:  # the server may still be down
            return None
        present = {s.snapshot_id for s in fresh.metadata.snapshots}
        if added <= present:
            return CommitResult(fresh.metadata, fresh.metadata_location or "")
        return None

    def commit_tables(
        self, changes: Iterable[tuple[Table, list[TableRequirement], list[TableUpdate]]]
    ) -> None:
        """Commit changes to several tables at once (``POST /transactions/commit``).

        All or nothing: 409 (:class:`CommitFailedError`) if any requirement fails, nothing
        changed; 5xx or a timeout is :class:`CommitStateUnknownError`.
        """
        self._require(ep.COMMIT_TRANSACTION)
        items = list(changes)
        body = {
            "table-changes": [
                {
                    "identifier": identifier_to_json(t.identifier),
                    "requirements": [r.to_json() for r in reqs],
                    "updates": [u.to_json() for u in ups],
                }
                for t, reqs, ups in items
            ]
        }
        what = "multi-table commit of " + ", ".join(".".join(t.identifier) for t, _, _ in items)
        key = uuid7() if self.idempotency_lifetime else None
        policy = (
            RetryPolicy.from_properties(items[0][0].metadata.properties) if items else RetryPolicy()
        )
        attempts = 1 + (policy.num_retries if key else 0)
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        state = _Outcome()
        try:
            self._send_tables(items, body, what, key, policy, attempts, deadline, state)
        except Exception as exc:
            if not state.uncertain or isinstance(exc, CommitStateUnknownError):
                raise
            # as in commit_table: after an unknown outcome no later error proves anything
            if self._all_committed(items):
                return
            raise CommitStateUnknownError(
                f"{what}: the outcome is unknown ({state.failure}, then: {exc}); no file was "
                "deleted"
            ) from exc

    def _all_committed(
        self, items: list[tuple[Table, list[TableRequirement], list[TableUpdate]]]
    ) -> bool:
        """Whether every table shows its new snapshots (a multi-table commit is all or
        nothing, so that proves it happened)."""
        done = [self._committed(t.identifier, ups) for t, _, ups in items]
        if items and all(d is not None for d in done):
            with self._etag_lock:
                for t, _, _ in items:
                    self._etags.pop(t.identifier, None)
            return True
        return False

    def _send_tables(
        self,
        items: list[tuple[Table, list[TableRequirement], list[TableUpdate]]],
        body: dict[str, Any],
        what: str,
        key: str | None,
        policy: RetryPolicy,
        attempts: int,
        deadline: float,
        state: _Outcome,
    ) -> None:
        """The attempts of :meth:`commit_tables` (no retry starts past ``deadline`` once one
        was made); ``state`` says whether one may have committed."""
        for attempt in range(attempts):
            headers = {"Idempotency-Key": key} if key else {}
            try:
                resp = self._send(
                    "POST", f"{self._prefix}/transactions/commit", body=body, headers=headers
                )
            except TransportError as exc:
                if not exc.maybe_sent and not state.uncertain:
                    raise CommitFailedError(f"{what}: {exc}") from exc
                state.failure = str(exc)
                state.uncertain = True
            else:
                if resp.status in (200, 204):
                    with self._etag_lock:
                        for t, _, _ in items:
                            self._etags.pop(t.identifier, None)
                    return
                if resp.status == 409 and state.uncertain and is_error_response(resp.body):
                    # the conflict may be with our own first attempt (see commit_table)
                    done = [self._committed(t.identifier, ups) for t, _, ups in items]
                    if all(d is not None for d in done):
                        return
                    if any(d is not None for d in done) or not all(
                        _adds_snapshots(ups) for _, _, ups in items
                    ):  # partly there, or a change that cannot be recognised
                        raise CommitStateUnknownError(
                            f"{what}: the outcome is unknown ({state.failure}, then a conflict "
                            "that may be with the first attempt); no file was deleted"
                        )
                    state.uncertain = False  # no table shows our snapshots: it did not commit
                if not _unknown_outcome(resp.status, resp.body):
                    raise self._error(resp, what)
                state.failure = str(self._error(resp, what))
                state.uncertain = True
            if attempt + 1 >= attempts:
                break
            wait = policy.wait_ms(attempt + 1) / 1000.0
            if attempt >= 1 and time.monotonic() + wait > deadline:
                break  # total-timeout ends the retries once one was made, as Java's Tasks
            time.sleep(wait)
        if self._all_committed(items):
            return
        raise CommitStateUnknownError(
            f"{what}: the outcome is unknown ({state.failure}); no file was deleted"
        )


@dataclass
class _Outcome:
    """Whether an attempt of a commit may have committed, and what made it unknown."""

    uncertain: bool = False
    failure: str = ""


#: Refusals a gateway gives before it forwards a request (authentication, size, rate): final
#: whoever answered them.
_REFUSED_BEFORE_FORWARDING = (401, 403, 407, 413, 429, 431)


def _is_json(body: bytes) -> bool:
    """Whether ``body`` parses as JSON: an answer the server wrote (one a resend would only
    replay), not a proxy's page."""
    try:
        json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _unknown_outcome(status: int, body: bytes) -> bool:
    """Whether an answer to a commit leaves its outcome unknown: a 500/502/503/504, or an
    answer that is not the catalog's (its body no error response: a gateway's page after it
    may have forwarded the commit), except the refusals given before forwarding."""
    if status in UNKNOWN_OUTCOME_STATUS:
        return True
    return status not in _REFUSED_BEFORE_FORWARDING and not is_error_response(body)


def _adds_snapshots(updates: Iterable[TableUpdate]) -> set[int]:
    """The ids of the snapshots ``updates`` add (how a commit is recognised after the fact)."""
    return {u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshot)}
