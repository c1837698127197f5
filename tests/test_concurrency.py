"""The shared executors: results in order, errors raised, nested calls finish, a new executor
after the process id changes."""

from __future__ import annotations

import threading

import pytest

from icefloe import _concurrency
from icefloe._concurrency import io_executor, parallel_map


def test_results_keep_the_order_of_the_items() -> None:
    assert parallel_map(lambda x: x * x, range(100), threads=7) == [x * x for x in range(100)]
    assert parallel_map(lambda x: x, []) == []


def test_at_most_threads_calls_run_at_once() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()
    gate = threading.Event()

    def job(_: int) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        gate.wait(0.01)
        with lock:
            running -= 1

    parallel_map(job, range(40), threads=3)
    assert 1 <= peak <= 3


def test_the_first_error_is_raised_and_stops_the_rest() -> None:
    seen: list[int] = []

    def job(x: int) -> int:
        seen.append(x)
        if x == 3:
            raise ValueError("boom")
        return x

    with pytest.raises(ValueError, match="boom"):
        parallel_map(job, range(1_000), threads=2)
    assert len(seen) < 1_000


def test_nested_calls_on_a_saturated_executor_finish() -> None:
    # every outer job runs an inner map on the same executor: with all of its threads busy
    # waiting, the inner maps must still finish on their calling threads
    width, jobs = 4, 40

    def outer(i: int) -> int:
        return sum(parallel_map(lambda x: x + i, range(10), threads=width, kind="work"))

    got = parallel_map(outer, range(jobs), threads=width, kind="work")
    assert got == [sum(range(10)) + 10 * i for i in range(jobs)]


def test_a_new_process_id_gets_new_executors(monkeypatch: pytest.MonkeyPatch) -> None:
    before = io_executor()
    assert io_executor() is before
    monkeypatch.setattr(_concurrency._STATE, "pid", -1)  # as seen from a forked child
    after = io_executor()
    assert after is not before
    assert after.submit(lambda: 42).result(timeout=10) == 42
