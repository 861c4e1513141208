"""Threads of a run: a pool of daemon threads and waits that give up (the watchdog).

A run compiles in one background thread and computes chunks in one thread per chunk in flight
(:attr:`~dpsim.engine.execution.planning.Plan.in_flight`) while the main thread writes finished
chunks. Every wait has a limit: a run that makes no progress for that long stops with
:class:`~dpsim.errors.RunStalled` naming what it waited for, instead of hanging silently.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from concurrent.futures import Future, TimeoutError as FutureTimeout
from functools import partial
from typing import Callable, Sequence

from dpsim.errors import RunStalled


def stalled(patience: float, what: str) -> RunStalled:
    """The error of a run that waited ``patience`` seconds for ``what`` without progress."""
    return RunStalled(
        f"no progress for {patience:g} s while waiting for {what}; the run was "
        f"stopped (finished chunks are saved: run the same command again to resume, "
        f"or allow longer with --watchdog SECONDS)"
    )


def wait(future: Future, patience: float, what: str):
    """``future.result()``, or :class:`RunStalled` after ``patience`` seconds."""
    try:
        return future.result(timeout=patience)
    except FutureTimeout:
        raise stalled(patience, what) from None


def in_order(
    pool: "DaemonPool", tasks: Sequence[Callable], in_flight: int, patience: float, what: str
):
    """Results of ``tasks`` (no-argument callables) in order, at most ``in_flight`` running
    on ``pool`` at once, so several chunks compute while the caller writes the finished one.
    Waiting longer than ``patience`` for one result raises :class:`RunStalled`."""
    pending: deque = deque()
    total = len(tasks)
    for number, task in enumerate(tasks):
        pending.append(pool.submit(task))
        if len(pending) == in_flight:
            yield wait(
                pending.popleft(), patience, f"{what} (chunk {number + 2 - in_flight}/{total})"
            )
    while pending:
        yield wait(
            pending.popleft(), patience, f"{what} (chunk {total + 1 - len(pending)}/{total})"
        )


class Tasks(Sequence):
    """``count`` tasks for :func:`in_order`, the i-th ``partial(task, i)``, made when taken (a
    step's chunks are not all listed up front)."""

    def __init__(self, count: int, task: Callable[[int], object]):
        self.count, self.task = count, task

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        if not 0 <= index < self.count:
            raise IndexError(index)
        return partial(self.task, index)


class DaemonPool:
    """A minimal thread pool of *daemon* threads returning ``Future`` s.

    ``concurrent.futures.ThreadPoolExecutor`` joins its (non-daemon) threads at interpreter
    exit, so one thread stuck inside a native call would keep the process alive forever
    after the watchdog fired. Daemon threads are abandoned at exit instead.
    """

    def __init__(self, threads: int, name: str):
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        for number in range(threads):
            threading.Thread(target=self._work, name=f"{name}-{number}", daemon=True).start()
        self._threads = threads

    def submit(self, fn: Callable) -> Future:
        future: Future = Future()
        self._tasks.put((future, fn))
        return future

    def _work(self):
        while True:
            item = self._tasks.get()
            if item is None:
                return
            future, fn = item
            if self._closed or not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # delivered to the waiting thread
                future.set_exception(exc)

    def shutdown(self):
        """Cancel what has not started and let the threads end (without waiting for them)."""
        self._closed = True
        while True:
            try:
                item = self._tasks.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in range(self._threads):
            self._tasks.put(None)
