"""Readiness and the bundle refresh (ADR-15, ADR-32).

The node is ready while it holds a verified bundle; the distributor is asked for a newer one every
``refresh_s``, with the last ETag (a 304 downloads nothing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from contracts.subjects import EventKind

from .bundle import BundleStore, fetch_bundle, instance_basic_auth
from .config import AgentConfig, UserData
from .drain.adapters import SchedulerAdapter
from .metrics import Metrics
from .model import AgentError, NodeIdentity

__all__ = ["BundleRefresh"]

log = logging.getLogger("sco.agent")


class BundleRefresh:
    """The agent's readiness and bundle refresh; ``Agent`` holds the state these methods read."""

    cfg: AgentConfig
    userdata: UserData
    node: NodeIdentity
    scheduler: SchedulerAdapter
    bundles: BundleStore
    metrics: Metrics
    ready: bool | None
    draining: bool
    _closing: bool
    _bundle_etag: str | None
    _emit: Callable[..., None]

    async def _apply_readiness(self) -> None:
        want = self.bundles.current is not None
        if self.ready == want or self.draining:
            return
        reason = "" if want else (self.bundles.last_refused_reason or "no bundle in user-data or on disk")[:120]
        try:
            await asyncio.wait_for(asyncio.to_thread(self.scheduler.set_ready, want, reason), 10)
            self.ready = want
        except Exception as exc:  # retried on the next refresh tick
            log.warning("could not mark the node %s: %s", "ready" if want else "not ready", exc)


    async def refresh_once(self) -> str:
        """Fetch the bundle from the distributor once; return the offer's outcome or ``unreachable``.

        The bundle is asked for with the ETag of the last one fetched: a 304 is ``unchanged`` without a download.
        """
        url = str(self.userdata.distributor_url)
        auth = instance_basic_auth(self.node.region, self.node.instance, self.cfg.nats_password_file)
        try:
            got = await asyncio.to_thread(fetch_bundle, url, 5.0, auth, self._bundle_etag)
        except AgentError as exc:
            self.metrics.inc("sco_agent_bundle_refresh_failures_total")
            log.debug("%s", exc)
            await self._apply_readiness()
            return "unreachable"
        if got is None:
            await self._apply_readiness()
            return "unchanged"
        raw, sig, etag = got
        offer = self.bundles.offer(raw, sig, "distributor")
        if offer.outcome in ("accepted", "unchanged"):
            self._bundle_etag = etag
        if offer.outcome == "refused":
            self._emit(EventKind.BUNDLE_REFUSED, cause="bundle-verification", attributes={
                "origin": "distributor", "reason": offer.reason[:300],
                "held_generation": self.bundles.current.generation if self.bundles.current else 0})
        await self._apply_readiness()
        return offer.outcome

    async def _refresh_loop(self) -> None:
        while not self._closing:
            await asyncio.sleep(self.cfg.refresh_s)
            await self.refresh_once()
