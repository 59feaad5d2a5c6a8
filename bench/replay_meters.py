"""What ``bench.controller_replay`` counts while a replay runs, on whichever tree's code ``sys.path`` gives: the
controllers' steps and psycopg's waits patched to count CPU and round trips, the rankers (in process, or a worker)
timed, the backend's CPU and context switches read from ``/proc``.

Loaded by path by the bench (``controller_replay._meters``), not imported as ``bench.replay_meters``: the baseline's
child runs the bench on the baseline tree's packages, where this module may not exist, while this file's code
drives both sides. Everything of the trees' own is imported inside the functions, from ``sys.path``.
"""

from __future__ import annotations

import contextlib
import cProfile
import importlib
import os
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Meters", "backend", "reads", "timed_ranker", "timed_rankers", "timed_worker"]


def timed_ranker(ranker_of: Any, first: list[Any], in_ranker: list[float]) -> Any:
    """``production_ranker`` (a tree from before the ranking worker) whose rankings add their CPU seconds to
    ``in_ranker`` once the first pass began."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        inner = ranker_of(*args, **kwargs)

        def rank(now: Any, feeds: Any) -> Any:
            c = time.process_time()
            try:
                return inner(now, feeds)
            finally:
                in_ranker[0] += time.process_time() - c if first else 0.0

        if hasattr(inner, "warm"):
            rank.warm = inner.warm   # type: ignore[attr-defined]
        return rank
    return timed


def timed_worker(worker_of: Any, first: list[Any], in_ranker: list[float], in_worker: list[float]) -> Any:
    """``ranking_worker`` whose rankings add this process's CPU seconds (reading the exclusions, handing the feeds
    over, publishing the rows) to ``in_ranker`` once the first pass began, and the worker's own CPU seconds from
    the first pass on to ``in_worker``."""

    @contextmanager
    def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with worker_of(*args, **kwargs) as worker:
            start = [0.0]

            def rank(now: Any, feeds: Any) -> Any:
                c = time.process_time()
                if first and not start[0]:
                    start[0] = worker.cpu_s()
                publish = worker(now, feeds)
                in_ranker[0] += time.process_time() - c if first else 0.0

                def timed_publish() -> None:
                    c = time.process_time()
                    publish()
                    in_ranker[0] += time.process_time() - c
                return timed_publish

            rank.warm = worker.warm   # type: ignore[attr-defined]
            yield rank
            in_worker[0] += worker.cpu_s() - start[0]
    return timed


@contextmanager
def timed_rankers(first: list[Any], in_ranker: list[float], in_worker: list[float]) -> Iterator[None]:
    """The tree's rankers timed while inside (``_timed_ranker``, ``_timed_worker``), put back on the way out."""
    from sco.commands import simulate_controller

    ranking_home: types.ModuleType = simulate_controller   # where ``contract_ranker`` finds the in-process ranker
    with contextlib.suppress(ImportError):   # a tree with the ranking worker keeps it beside the worker
        ranking_home = importlib.import_module("sco.commands.replay_ranking")
    ranker_of = ranking_home.production_ranker
    worker_of = getattr(simulate_controller, "ranking_worker", None)
    setattr(ranking_home, "production_ranker", timed_ranker(ranker_of, first, in_ranker))  # noqa: B010
    if worker_of is not None:
        simulate_controller.ranking_worker = timed_worker(worker_of, first, in_ranker, in_worker)
    try:
        yield
    finally:
        setattr(ranking_home, "production_ranker", ranker_of)  # noqa: B010
        if worker_of is not None:
            simulate_controller.ranking_worker = worker_of


class Meters:
    """What ``_measure`` counts while a replay runs: the first pass's clocks, each backend's CPU and waits (first
    and last pass), round trips, and the CPU seconds inside the controllers' steps, the ranking, its worker and
    this bench's own reading of ``/proc``; ``profile``: the steps under ``cProfile`` (CPU, not the waits)."""

    def __init__(self, profile: bool) -> None:
        self.first: list[tuple[float, float]] = []
        self.server: dict[int, list[tuple[float, int]]] = {}   # backend pid -> (CPU s, voluntary switches)
        self.trips = {"all": 0, "steps": 0, "in_step": 0, "after_first": 0}
        self.in_steps = [0.0]   # the controllers' passes (the rest: the region, the tallies, the relay)
        self.in_ranker = [0.0]  # the five-minute ranking and its forecast (production: a Dagster asset)
        self.in_worker = [0.0]  # the ranking worker's process (a tree with one)
        self.in_bench = [0.0]   # this bench's own reading of the backend's /proc files
        self.prof = cProfile.Profile(time.process_time) if profile else None

    def _timed(self, step: Any) -> Any:
        def timed_step(ctl: Any) -> Any:
            if not self.first:
                self.first.append((time.perf_counter(), time.process_time()))
                self.trips["after_first"] = self.trips["all"]
            pid = ctl.conn.info.backend_pid
            b = time.process_time()
            self.server.setdefault(pid, [backend(pid)] * 2)[1] = backend(pid)
            self.in_bench[0] += time.process_time() - b
            self.trips["steps"] += 1
            if self.prof is not None:
                self.prof.enable()
            c = time.process_time()
            try:
                return step(ctl)
            finally:
                self.in_steps[0] += time.process_time() - c
                if self.prof is not None:
                    self.prof.disable()
                self.trips["steps"] -= 1
        return timed_step

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The controllers' steps, psycopg's waits and the tree's rankers timed while inside; put back after."""
        import psycopg

        from controllers.controller.loop import Controller

        step, wait = Controller.step, psycopg.Connection.wait

        def counted_wait(conn: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            return wait(conn, reads(gen, self.trips), *args, **kwargs)

        Controller.step = self._timed(step)   # type: ignore[method-assign]
        psycopg.Connection.wait = counted_wait   # type: ignore[method-assign,assignment]
        try:
            with timed_rankers(self.first, self.in_ranker, self.in_worker):
                yield
        finally:
            Controller.step = step   # type: ignore[method-assign]
            psycopg.Connection.wait = wait   # type: ignore[method-assign]

    def figures(self, passes: int, began: tuple[float, float], ended: tuple[float, float]) -> dict[str, Any]:
        """The per-pass figures of a replay of ``passes`` from ``began`` to ``ended`` (wall, CPU)."""
        (t0, c0), (t1, c1), (f0, fc0) = began, ended, self.first[0]
        return {"setup_wall_s": f0 - t0, "setup_cpu_s": fc0 - c0,
                "pass_wall_s": (t1 - f0) / passes, "pass_cpu_s": (c1 - fc0 - self.in_bench[0]) / passes,
                "pass_step_cpu_s": self.in_steps[0] / passes, "pass_ranker_cpu_s": self.in_ranker[0] / passes,
                "pass_worker_cpu_s": self.in_worker[0] / passes,
                "pass_pg_cpu_s": sum(b[0] - a[0] for a, b in self.server.values()) / passes,
                "pass_pg_waits": sum(b[1] - a[1] for a, b in self.server.values()) / passes,
                "pass_round_trips": (self.trips["all"] - self.trips["after_first"]) / passes,
                "pass_controller_round_trips": self.trips["in_step"] / passes}


def reads(gen: Any, trips: dict[str, int]) -> Any:
    """``gen`` (a psycopg generator run by ``Connection.wait``: a statement outside a pipeline, a pipeline's sync or
    a fetch), counted as a round trip when it waits to read and the server's answer is what wakes it (once a
    call). A pipeline's send that waits for nothing back is not one, nor a fetch whose results had arrived."""
    sent: Any = None
    waited = False
    try:
        while True:
            w = gen.send(sent)
            sent = yield w
            if not waited and int(w) & 1 and sent and int(sent) & 1:   # waited to read, and the answer came
                waited = True
                trips["all"] += 1
                trips["in_step"] += 1 if trips["steps"] else 0
    except StopIteration as stop:
        return stop.value


def backend(pid: int) -> tuple[float, int]:
    """User + system CPU seconds of a local process (the PostgreSQL backend serving the replay) and its voluntary
    context switches (each time it waited, mostly for the client's next statement: a round trip seen from the
    server)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0
    switches = next((int(line.split()[1]) for line in status.splitlines()
                     if line.startswith("voluntary_ctxt_switches")), 0)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), switches
