"""The agent process: boot, notice intake (NATS + metadata poll), drain, bundle refresh, event shipping.

Everything the notice path needs is on the node: the verified bundle (disk / user-data), the scheduler
adapter and the local actuator. NATS, the metadata endpoint and the distributor are inputs that may be
absent for hours; the agent keeps retrying them and never waits for them before acting (ADR-09, ADR-15).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from contracts.subjects import EventKind, advisory_subject, agent_inbox_prefix, notice_subject

from . import __version__, instruments
from .bundle import BundleStore, HeldBundle
from .config import AgentConfig, UserData
from .drain.adapters import Credentials, LocalActuator, SchedulerAdapter
from .drain.engine import DrainArgs, DrainEngine, DrainReport
from .events import make_event
from .httpwire import get_body
from .metrics import Metrics
from .model import AgentError
from .notice.advisory import AdvisoryWatch
from .notice.coalesce import NoticeState, Verdict, coalesce
from .notice.file import NOTICE_FILE, resumable, save_notice
from .notice.file import notice_window as _notice_window
from .notice.intake import NoticeIntake
from .notice.messages import Notice, NoticeGate
from .notice.nats_auth import nats_auth
from .refresh import BundleRefresh
from .shipping import EventShipper, wake_soon
from .spool import Spool

__all__ = ["NOTICE_FILE", "Agent", "Clock", "SystemClock"]

log = logging.getLogger("sco.agent")

# a subscription's undelivered messages (nats-py): a flood is dropped at the client, not held in memory (the
# relay sends one notice and perhaps one advisory; the metadata poll still catches a dropped notice)
PENDING_MSGS = 1024
PENDING_BYTES = 1 << 20


class Clock(Protocol):
    """The agent's clocks: wall time (UTC) and monotonic seconds; injected in tests."""

    def now(self) -> datetime:
        """The wall-clock time, timezone-aware UTC."""

    def monotonic(self) -> float:
        """Monotonic seconds."""


class SystemClock:
    """The system's clocks."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    monotonic = staticmethod(time.monotonic)  # ``time.monotonic()``, called directly: the notice path reads it


class Agent(BundleRefresh):
    """The node agent: holds the bundle, listens for notices, drains, spools and ships events."""

    def __init__(self, config: AgentConfig, userdata: UserData, public_key_pem: bytes,
                 scheduler: SchedulerAdapter, actuator: LocalActuator, credentials: Credentials | None = None,
                 clock: Clock | None = None, metrics: Metrics | None = None,
                 on_first_action: Callable[[float], None] | None = None,
                 writer: ThreadPoolExecutor | None = None) -> None:
        """Wire the configuration, the node's user-data and key, the adapters, the clock and the metrics."""
        self.cfg = config
        self.userdata = userdata
        self.node = userdata.node
        self.clock = clock or SystemClock()
        self.metrics = metrics or Metrics()
        instruments.describe(self.metrics)
        self.scheduler = scheduler
        self.bundles = BundleStore(config.state_dir, public_key_pem, self.node.partition)
        self.spool = Spool(config.state_dir / "spool", config.spool_max_events, config.spool_max_bytes,
                           config.spool_fsync)
        self.gate = NoticeGate()
        self.intake = NoticeIntake(self.node, self.metrics, self.clock.monotonic)
        self._advisory_drain: asyncio.Future[DrainReport] | None = None
        self._advisory_starting = False  # an advisory's first action is being awaited (its task not made yet)
        self.advisories = AdvisoryWatch(scheduler, self._emit, self.clock, lambda: self._advisory_drain,
                                        lambda: self.bundles.current, lambda: self.draining)
        self.engine = DrainEngine(scheduler, actuator, credentials, self._emit, self.clock.now,
                                  self.clock.monotonic, config.scheduler_timeout_s, self._first_action)
        self._first_action_cb = on_first_action
        # one thread writes the spool in order, off the event loop (the bench shares one across agents)
        self._own_writer = writer is None
        self._writer = writer or ThreadPoolExecutor(1, thread_name_prefix="sco-agent-spool")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        # set once the notice subscriptions exist: the metadata endpoint is read at once, so a notice published
        # while the agent was still connecting (core NATS keeps none for a late subscriber) is not left to the
        # next poll
        self._subscribed = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._subs: list[Any] = []
        self.nc: Any = None
        self.ready: bool | None = None
        self.drains: list[asyncio.Future[DrainReport]] = []
        self.reports: list[DrainReport] = []
        self.draining = False
        self._current_notice: Notice | None = None
        self._args_of, self._done_of = self._drain_args, self._drain_done  # bound once: no method object per notice
        self._closing = False
        self._bundle_etag: str | None = None  # of the last bundle the distributor sent (If-None-Match)
        self.shipper = EventShipper(self.spool, self._writer, self.metrics, self._wake, lambda: self.nc,
                                    lambda: self._closing)
        instruments.watch(self.metrics, self.bundles, self.spool, self.clock.now,
                          lambda: self.nc is not None and bool(self.nc.is_connected))

    # ---------- boot ----------
    async def boot(self) -> None:
        """Hold the best verified bundle from disk and user-data; report readiness. Never touches the network."""
        self._loop = asyncio.get_running_loop()
        disk = self.bundles.load_disk()
        if disk is not None and disk.outcome == "refused":
            self._emit(EventKind.BUNDLE_REFUSED, cause="bundle-verification", attributes={
                "origin": "disk", "reason": disk.reason[:300]})
        if self.userdata.bundle is not None and self.userdata.bundle_sig is not None:
            offer = self.bundles.offer(self.userdata.bundle, self.userdata.bundle_sig, "user-data")
            if offer.outcome == "refused":
                self._emit(EventKind.BUNDLE_REFUSED, cause="bundle-verification", attributes={
                    "origin": "user-data", "reason": offer.reason[:300]})
        await self._apply_readiness()

    # ---------- run ----------
    async def start(self, connect: bool = True) -> None:
        """Boot, resume an interrupted drain, then start listening (NATS, metadata), refreshing and shipping."""
        await self.boot()
        self._resume_drain()
        if connect and self.userdata.nats_urls:
            self._tasks.append(asyncio.create_task(self._nats_loop(), name="nats"))
        if self.userdata.metadata_url:
            self._tasks.append(asyncio.create_task(self._metadata_loop(), name="metadata"))
        if self.userdata.distributor_url:
            self._tasks.append(asyncio.create_task(self._refresh_loop(), name="refresh"))
        self._tasks.append(asyncio.create_task(self.shipper.run(), name="ship"))
        self._tasks.append(asyncio.create_task(self.advisories.run(lambda: self._closing), name="advisory"))

    async def stop(self) -> None:
        """Stop every loop, close NATS and flush the spool writer."""
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()
            self.nc = None
        await asyncio.get_running_loop().run_in_executor(self._writer, lambda: None)  # flush the spool writer
        if self._own_writer:
            self._writer.shutdown(wait=True)

    async def attach(self, nc: Any) -> None:
        """Subscribe this agent's notice subjects on a connected client (also used by the bench)."""
        region, instance = self.node.region, self.node.instance

        async def on_notice(msg: Any) -> None:
            await self._receive(msg.data, "notice")

        async def on_advisory(msg: Any) -> None:
            await self._receive(msg.data, "advisory")

        limits = {"pending_msgs_limit": PENDING_MSGS, "pending_bytes_limit": PENDING_BYTES}
        subs = [await nc.subscribe(notice_subject(region, instance), cb=on_notice, **limits),
                await nc.subscribe(advisory_subject(region, instance), cb=on_advisory, **limits)]
        with contextlib.suppress(Exception):
            await nc.flush(timeout=2)  # the server has the subscriptions before we report connected
        self._subs = subs
        self.nc = nc
        self._wake.set()
        self._subscribed.set()

    async def _nats_loop(self) -> None:
        from nats.aio.client import Client  # imported here: `sco-agent check` does not load it

        wait = 0.5
        while not self._closing:
            nc = Client()
            try:
                await nc.connect(servers=list(self.userdata.nats_urls), name=f"sco-agent-{self.node.instance}",
                                 connect_timeout=2, reconnect_time_wait=1, max_reconnect_attempts=-1,
                                 allow_reconnect=True, ping_interval=60,
                                 # its own reply inbox: a per-instance credential may read no one else's
                                 inbox_prefix=agent_inbox_prefix(self.node.instance),
                                 reconnected_cb=self._on_reconnect, error_cb=self._on_nats_error,
                                 **nats_auth(self.cfg, self.node))
            except Exception as exc:
                log.info("NATS relay unreachable (%s); retrying in %.1f s", exc, wait)
                with contextlib.suppress(Exception):
                    await nc.close()
                await asyncio.sleep(wait)
                wait = min(wait * 2, 10.0)
                continue
            await self.attach(nc)
            return

    async def _on_reconnect(self) -> None:
        self._wake.set()

    async def _on_nats_error(self, exc: Exception) -> None:
        if type(exc).__name__ == "SlowConsumerError":  # a message past the subscription's pending bound
            self.metrics.inc("sco_agent_nats_dropped_total")
        log.debug("NATS: %s", exc)

    # ---------- notice intake ----------
    def _on_message(self, data: bytes, kind: str) -> None:
        notice = self.intake.from_nats(data, kind)
        if notice is not None:
            self.on_notice(notice)

    async def _receive(self, data: bytes, kind: str) -> None:
        """A NATS message on a ``kind`` subject: the subscription's callback.

        A drain's first action is issued here, awaited in the subscription's own task: no task is created and no
        turn of the loop passes before the scheduler call. The drain's other arguments (contracts, window, the
        notice's announcement) are built only when the rest of the drain starts (``DrainEngine.start``): in a
        burst, not before the other notices' first actions.
        """
        notice = self.intake.from_nats(data, kind)
        if notice is None:
            return
        drain = self._decide(notice)
        if drain is None:
            return
        try:
            task = await self.engine.start(notice.notice_id, drain[1] is not None,
                                           partial(self._args_of, notice, *drain))
        finally:
            self._advisory_starting = False
        self._started(notice, task)

    def on_metadata(self, data: bytes) -> None:
        """Act on the metadata endpoint's document: bounded like a NATS message, then each notice in it."""
        for notice in self.intake.from_metadata(data):
            self.on_notice(notice)

    def on_notice(self, notice: Notice) -> None:
        """Act on a notice: refuse an implausible one, else what ``agent.notice.coalesce`` decides.

        A drain's scheduler call is issued before anything else is done for its notice: the notice's counter,
        its file (a restart resumes the drain) and its event follow the first action (``announce``).
        """
        drain = self._decide(notice)
        if drain is not None:
            self._started(notice, self.engine.launch(*self._drain_args(notice, *drain)))

    def _decide(self, notice: Notice) -> tuple[HeldBundle | None, set[str] | None] | None:
        """The bundle held at the notice and the advisory selection when ``notice`` starts a drain; else None.

        A notice that starts no drain is refused or counted (and recorded, within the flood bound) here.
        """
        if not self.intake.plausible(notice):
            return None
        held = self.bundles.current  # frozen: the drain's contracts are listed from it after the first action
        selected = None
        if notice.kind == "advisory":
            selected = {c.ref for c in held.contracts.values() if c.advisory_drain} if held else set()
        running = self._advisory_starting or (self._advisory_drain is not None and not self._advisory_drain.done())
        decision = coalesce(notice.kind, NoticeState(not self.gate.admit(notice), self.draining, running,
                                                     bool(selected), self.intake.flood.recorded))
        if decision.verdict is Verdict.DRAIN:
            if notice.kind == "notice":
                self.draining = True
                self.advisories.release()  # a reclaim followed any advisory: not a false positive
            else:  # counted as running from now: its first action may be awaited before its task exists
                self._advisory_starting = True
            self._current_notice = notice
            return held, selected
        if self.intake.count(notice, decision):
            kind = EventKind.NOTICE if notice.kind == "notice" else EventKind.ADVISORY
            self._emit(kind, cause=notice.cause, drill=notice.drill,
                       attributes=self._notice_attrs(notice, action=decision.action))
        return None

    def _drain_args(self, notice: Notice, held: HeldBundle | None, selected: set[str] | None) -> DrainArgs:
        """The engine's arguments for ``notice``'s drain, with the contracts of ``held`` (the bundle at the notice).

        Built after the first action when the first action is issued in the subscription callback; the window
        counts from the notice's receipt whenever it is computed. The notice's counter, file and event are
        deferred to ``announce``, after the first action.
        """
        hard = notice.kind == "notice"
        contracts = list(held.contracts.values()) if held else []
        terminate_in = _notice_window(notice, self.clock.now(), self.clock.monotonic())
        generation = held.generation if held else 0

        def announce() -> None:  # after the first action: the counter, the notice file, the notice's event
            self.metrics.inc("sco_agent_notices_total", channel=notice.channel, kind=notice.kind)
            if hard:
                self._writer.submit(self._save_notice, notice, False)  # a restart resumes this drain
            self._emit(EventKind.NOTICE if hard else EventKind.ADVISORY, cause=notice.cause, drill=notice.drill,
                       attributes=self._notice_attrs(notice, action="drain", bundle_generation=generation))

        return (notice.notice_id, notice.received, contracts, notice.cause, notice.drill, terminate_in, selected,
                announce)

    def _started(self, notice: Notice, task: asyncio.Future[DrainReport]) -> None:
        self._advisory_starting = False
        self.drains.append(task)
        if notice.kind != "notice":
            self._advisory_drain = task
            self.advisories.hold(notice)
        task.add_done_callback(self._done_of)

    # ---------- drains survive a restart ----------
    def _save_notice(self, notice: Notice, done: bool) -> None:
        """``<state>/notice.json``: the hard notice being drained, so a restarted agent resumes the drain."""
        save_notice(self.cfg.state_dir / NOTICE_FILE, notice, self.clock.now(), self.clock.monotonic(), done)

    def _resume_drain(self) -> None:
        notice = resumable(self.cfg.state_dir / NOTICE_FILE, self.clock.now, self.clock.monotonic)
        if notice is not None:
            self.on_notice(notice)

    def _notice_attrs(self, notice: Notice, **extra: Any) -> dict[str, Any]:
        attrs: dict[str, Any] = {"notice_id": notice.notice_id, "channel": notice.channel}
        if notice.terminate_at is not None:
            attrs["terminate_at"] = notice.terminate_at.isoformat()
        attrs.update(extra)
        return attrs

    def _drain_done(self, task: asyncio.Future[DrainReport]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("drain failed: %r", exc)
            return
        report = task.result()
        self.reports.append(report)
        current = self._current_notice
        if current is not None and current.kind == "notice" and current.notice_id == report.notice_id:
            with contextlib.suppress(RuntimeError):
                self._writer.submit(self._save_notice, current, True)
        if report.path == "local":
            self.metrics.inc("sco_agent_local_drains_total")
        for ref, info in report.workloads.items():
            if "seconds" in info:
                self.metrics.observe("sco_agent_drain_seconds", float(info["seconds"]), path=report.path)
            if info.get("overrun"):  # by contract ref: the overrun alert routes on the workload
                self.metrics.inc("sco_agent_overruns_total", contract=str(ref))

    def _first_action(self, seconds: float) -> None:
        self.metrics.observe("sco_agent_first_action_seconds", seconds)
        if self._first_action_cb is not None:
            self._first_action_cb(seconds)

    async def _metadata_loop(self) -> None:
        url = str(self.userdata.metadata_url)
        while not self._closing:
            try:
                data = await asyncio.to_thread(get_body, url, 2.0)
            except AgentError as exc:
                log.debug("metadata poll: %s", exc)
            else:
                self.on_metadata(data)
            with contextlib.suppress(TimeoutError):  # the poll interval, or at once when the subscriptions land
                await asyncio.wait_for(self._subscribed.wait(), self.cfg.metadata_poll_s)
                self._subscribed.clear()

    # ---------- events ----------
    def _emit(self, kind: EventKind, *, cause: str, drill: bool = False, workload: str | None = None,
              contract_version: str | None = None, attributes: dict[str, Any] | None = None) -> None:
        held = self.bundles.current  # which agent version and bundle generation this node runs (ADR-32)
        attrs = {"agent_version": __version__, "bundle_generation": held.generation if held else 0,
                 **(attributes or {})}
        event = make_event(kind, now=self.clock.now(), node=self.node, cause=cause, workload=workload,
                           contract_version=contract_version, drill=drill, attributes=attrs)
        try:
            fut = self._writer.submit(self.spool.append, event)
        except RuntimeError:  # the writer is shut down (stopping): write it here, it must not be lost
            self.spool.append(event)
            return
        loop = self._loop
        if loop is not None:
            fut.add_done_callback(lambda _f: wake_soon(loop, self._wake))

    async def flush_events(self, timeout: float = 10.0) -> bool:
        """Wait until the spool is empty (tests, shutdown). Returns False on timeout."""
        return await self.shipper.flush(self.clock.monotonic, timeout)
