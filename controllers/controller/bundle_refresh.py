"""The controller refreshes its own bundle between passes (ADR-10, ADR-15, ADR-30).

``BundleRefresh.between_passes`` asks a feed (``distributor.ControllerBundleFeed``) for the
partition's ``controller-bundle.json``. The feed verifies a served bundle exactly as the controller verifies
its ``--bundle`` at start (signature, succession from the held bundle, governance signature when governed
fields changed: ``contracts.bundle_verify``) and then asks this module's ``admit`` — the partition's
``BundleGuard`` — which records the new head of the chain in PostgreSQL (so a restart refuses anything older).

A taken bundle becomes the desired state of the *next* pass (``Controller.use``; level-triggered, the swap
happens between passes and never inside one) and its contracts are published as the contracts in force. A
refused one leaves the held bundle in force, is logged with its stable code (``BND001``..``BND004``), counted
(``sco_controller_bundle_refused_total{code}``) and reported as a ``bundle-refused`` event through the outbox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from contracts.bundle_verify import BundleError, VerifiedBundle
from contracts.provider import Clock
from contracts.schema import Contract

from .bundle_guard import BundleGuard, Refusal, refusal_event
from .loop import Controller
from .store import publish_contracts_in_force

__all__ = ["BundleRefresh", "ControllerFeed", "Refreshed", "contracts_of"]

log = logging.getLogger(__name__)

class PolledLike(Protocol):
    """What one poll of a feed says (``distributor.Polled``)."""

    @property
    def taken(self) -> VerifiedBundle | None:
        """The newer verified bundle the poll took, or None."""

    @property
    def refused(self) -> BundleError | None:
        """Why the offered bundle was refused, or None."""

    @property
    def offered_generation(self) -> int | None:
        """The generation the feed offered, or None."""

    @property
    def error(self) -> str:
        """Why the poll failed (empty when it did not)."""


class ControllerFeed(Protocol):
    """Where newer controller bundles come from (``distributor.ControllerBundleFeed``)."""

    url: str
    held: VerifiedBundle

    def poll(self, admit: Callable[[dict[str, Any], str], BundleError | None] | None = None) -> PolledLike:
        """Ask for a newer bundle; ``admit`` may refuse one the controller cannot run."""


def contracts_of(payload: dict[str, Any]) -> dict[str, Contract]:
    """The contracts of a verified controller bundle, by ref."""
    fields = set(Contract.model_fields)
    return {ref: Contract.model_validate({k: v for k, v in entry.items() if k in fields})
            for ref, entry in payload.get("workloads", {}).items()}


@dataclass(frozen=True)
class Refreshed:
    """What one refresh did: ``taken`` (the next pass plans with it), ``refused`` (held kept), ``unchanged`` or
    ``unreachable``; the code of a refusal and the generation in force after it."""

    outcome: Literal["taken", "refused", "unchanged", "unreachable"]
    generation: int
    code: str = ""
    message: str = ""


class BundleRefresh:
    """Polls the feed between two passes of ``controller`` and swaps its contracts when a bundle is taken."""

    def __init__(self, controller: Controller, feed: ControllerFeed, guard: BundleGuard | None, clock: Clock) -> None:
        """``guard``: the partition's chain in PostgreSQL (None: the feed's held bundle is the only chain)."""
        self.controller, self.feed, self.guard, self.clock = controller, feed, guard, clock
        self.refusals = 0
        self._refusal: Refusal | None = None
        registry = controller.metrics.registry if controller.metrics is not None else None
        self.registry = registry
        if registry is not None:  # the series are described with the controller's (metrics.SERIES)
            registry.set("sco_controller_bundle_generation", float(feed.held.generation))
            registry.inc("sco_controller_bundle_refreshed_total", 0.0)

    def _admit(self, payload: dict[str, Any], where: str) -> BundleError | None:
        self._refusal = None if self.guard is None else self.guard.admit(payload, where)
        if self._refusal is None:
            return None
        return BundleError(self._refusal.message, code=self._refusal.code)

    def between_passes(self) -> Refreshed:
        """One poll; call it only between two passes (``run``'s ``on_pass``)."""
        self._refusal = None
        polled = self.feed.poll(self._admit)
        if polled.taken is not None:
            return self._take(polled.taken)
        if polled.refused is not None:
            return self._refuse(polled.refused, polled.offered_generation)
        held = self.feed.held.generation
        return Refreshed("unreachable", held, message=polled.error) if polled.error else Refreshed("unchanged", held)

    def _take(self, bundle: VerifiedBundle) -> Refreshed:
        self.controller.use(contracts_of(bundle.payload))
        publish_contracts_in_force(self.controller.conn, bundle.payload)
        if self.registry is not None:
            self.registry.inc("sco_controller_bundle_refreshed_total")
            self.registry.set("sco_controller_bundle_generation", float(bundle.generation))
        log.info("controller bundle generation %d taken from %s; the next pass plans with it", bundle.generation,
                 self.feed.url)
        return Refreshed("taken", bundle.generation)

    def _refuse(self, error: BundleError, offered: int | None) -> Refreshed:
        self.refusals += 1
        held = self.feed.held.generation
        log.warning("%s: controller bundle from %s refused, generation %d stays in force: %s", error.code,
                    self.feed.url, held, error.message)
        if self.registry is not None:
            self.registry.inc("sco_controller_bundle_refused_total", code=error.code)
        refusal = self._refusal if self._refusal is not None and self._refusal.code == error.code else Refusal(
            error.code, error.message, offered if offered is not None else -1, held, self.refusals)
        s = self.controller.s
        self.controller.store.emit([refusal_event(refusal, region=s.region, partition=s.partition,
                                                  now=self.clock.now())])
        return Refreshed("refused", held, error.code, error.message)
