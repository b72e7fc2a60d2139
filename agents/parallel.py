"""Run instances on several browsers at once, each in its own thread with its own headless Chromium and solver.

``run_parallel`` hands out the instances, yields each result as it is done (and None every ``tick`` seconds, for a
heartbeat), and stops the way a run must: a ``StopRun`` or any failure in a thread stops the others after their
current instance; closing the generator (a cancelled run, an interrupted command) ends every browser still working
(``agents.browser.end_browser``) so that a command stuck in one never holds the run, and waits at most
``LET_GO_SECONDS`` for the threads: one waiting on a model request (its daemon thread runs out the request's
timeout and asks no more, ``agents.llm.Stopped``) does not hold it either. A browser the harness ended
at an instance's time limit is replaced by a new one for the next instance.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import scoring
from .browser import end_browser
from .harness import FieldRequest, Harness, InstanceResult, Limits, Solver
from .turkle import TaskDir

log = logging.getLogger(__name__)
LET_GO_SECONDS = 5.0  # closed early: how long the threads are waited for (one in a model request is not)


@dataclass
class Item:
    """One instance to run: its task, index and page."""

    task: TaskDir
    instance: int
    url: str


class _Stoppable(Solver):
    """A thread's solver that stops solving (leaves the remaining fields alone) once the run is stopping."""

    def __init__(self, inner: Solver, stop: threading.Event):
        self.inner, self.stop = inner, stop
        self.name, self.uses_gold = inner.name, inner.uses_gold

    def begin_instance(self, task, instance: int) -> None:
        self.inner.begin_instance(task, instance)

    def solve(self, request: FieldRequest) -> None:
        if not self.stop.is_set():
            self.inner.solve(request)

    def instance_answer(self) -> str | None:
        return self.inner.instance_answer()

    def instance_unapplied(self) -> list[dict]:
        return self.inner.instance_unapplied()


def _quit(driver) -> None:
    try:
        driver.quit()
    except Exception:  # a browser that died or was ended already
        log.warning("a browser of the run did not quit cleanly", exc_info=True)


def run_parallel(
    items: list[Item],
    browsers: int,
    make_driver: Callable[[], object],
    make_solver: Callable[[], Solver],
    *,
    metric: str = scoring.OFFICIAL,
    after: Callable[[object, InstanceResult], object] | None = None,
    stop: threading.Event | None = None,
    tick: float = 0.5,
    thread_exit: Callable[[], None] | None = None,
    limits: Limits | None = None,
    harnesses: list[Harness] | None = None,
) -> Iterator[tuple[Item, InstanceResult, object] | None]:
    """Run ``items`` on ``browsers`` threads, each with its own browser (``make_driver()``: its own profile) and
    solver (``make_solver()``), taking the next item when one is done, within ``limits``.

    Yields ``(item, result, extra)`` as instances finish (``extra = after(driver, result)``, run in the instance's
    thread, e.g. a screenshot; None when the instance's browser was ended), and None every ``tick`` seconds in
    between. A ``StopRun`` or any failure in a thread stops the others after their current instance (whose result is
    dropped) and is raised here; so does a browser that cannot start. Setting ``stop`` stops them the same way;
    closing the generator also ends the browsers still working. Every browser is quit before the generator ends;
    ``thread_exit()`` runs at the end of each thread. ``harnesses`` gets each thread's ``Harness`` (its ``current``
    says where it is)."""
    stop = stop or threading.Event()
    work: queue.SimpleQueue[Item] = queue.SimpleQueue()
    for item in items:
        work.put(item)
    out: queue.SimpleQueue = queue.SimpleQueue()
    count = max(1, min(browsers, len(items)))
    working: dict[int, Harness] = {}  # thread number → its harness, while it has a browser

    def worker(number: int):
        harness = None
        try:
            harness = Harness(make_driver(), _Stoppable(make_solver(), stop), metric, limits)
            working[number] = harness
            if harnesses is not None:
                harnesses.append(harness)
            while not stop.is_set():
                try:
                    item = work.get_nowait()
                except queue.Empty:
                    break
                result = harness.run_instance(item.task, item.instance, item.url)
                if stop.is_set():
                    break
                if harness.browser_ended:  # past its time limit: a new browser for the next instance
                    _quit(harness.driver)
                    harness.use_driver(make_driver())
                    out.put(("done", item, result, None))
                else:
                    out.put(("done", item, result, after(harness.driver, result) if after else None))
        except BaseException as error:  # handed to the caller's thread, which raises it
            stop.set()
            out.put(("error", error))
        finally:
            working.pop(number, None)
            if harness is not None:
                _quit(harness.driver)
            if thread_exit is not None:
                thread_exit()
            out.put(("exit",))

    threads = [threading.Thread(target=worker, args=(n,), name=f"agent-browser-{n}", daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    failure: BaseException | None = None
    finished = False
    try:
        running = count
        while running:
            try:
                message = out.get(timeout=tick)
            except queue.Empty:
                yield None
                continue
            if message[0] == "exit":
                running -= 1
            elif message[0] == "error":
                failure = failure or message[1]
            elif not stop.is_set():
                yield message[1], message[2], message[3]
        finished = True
        if failure is not None:
            raise failure
    finally:
        stop.set()
        if finished:
            for thread in threads:
                thread.join()
        else:  # closed early: a browser stuck in a command, or a model request in flight, must not hold the run
            for harness in list(working.values()):
                end_browser(harness.driver)
            deadline = time.monotonic() + LET_GO_SECONDS
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            for harness in list(working.values()):  # a browser started meanwhile by a thread not yet done
                end_browser(harness.driver)
