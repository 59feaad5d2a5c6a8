"""Apply: execute a pass's decision against the provider, the ledger, the revocation hooks and the database,
in the decided order, and record the pass (ADR-10, ADR-12, ADR-23).

Idempotent, keyed by stable ids: a launch key or an instance id is acted on at most once a pass, and a pass
repeated after a crash finds the launched instances in the listing (the diff does not ask again). Mutating
provider calls go through the partition's token budget (``BudgetedProvider``): the first ``Throttled`` ends
the pass's launches and terminations, the next pass picks up the rest. Fallback capacity is reserved in the
ledger before its launch, consumed when the instances exist, released otherwise. Every decided note and every
event of what was done goes out through the outbox; each pass writes its ``controller_cycles`` row.

A launch refused for capacity (``CapacityUnavailable``) shows its pool full: the pass makes no other launch into
that pool (no token spent on it), and the refusal is remembered (``Memory.refused_pools``: pool -> when) for
``decide``, which gives the pool no room beyond what we hold until a rate card taken after it (at
20,000 in the fleet simulation, 1,654 refused launches, the partitions' budgets spent on them).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contracts.events import Event
from contracts.provider import LaunchRequest, OwnerTags, Provider
from contracts.provider_errors import CapacityUnavailable, NotFound, NotOwned, ProviderError, QuotaExceeded, Throttled
from contracts.schema import Contract
from contracts.subjects import EventKind

from . import approval_store, ledger
from .agent_versions import choose_agent
from .approvals import alertmanager_payload
from .decision import (
    AskApproval,
    Decision,
    Desired,
    OpenBreaker,
    Place,
    Publish,
    RecordShortfall,
    RecordVerdict,
    Revoke,
    StartFallback,
    WriteClaims,
    WritePlans,
)
from .model import Launch, Note, Observed, Purpose, SlotKey, Terminate
from .observe import observe
from .revocation import Revocation, Revoker, spiffe_id
from .settings import PassReport
from .store import Store, note_event
from .userdata import AgentCredentials, LaunchUserData, UserDataError, render

__all__ = ["Actuator"]

log = logging.getLogger(__name__)


@dataclass
class _Run:
    notes: list[Note] = field(default_factory=list)
    launched: int = 0
    terminated: int = 0
    throttled: bool = False
    done: set[str] = field(default_factory=set)     # launch keys and instance ids acted on this pass
    full: set[str] = field(default_factory=set)     # pools a launch of this pass was refused for capacity
    # launches not tried because their pool was in ``full``: (pool, workload) -> [launches, instances]
    deferred: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def defer(self, pool: str, workload: str, instances: int) -> None:
        """A launch of ``instances`` into ``pool`` for ``workload`` not tried: the pool refused one this pass."""
        counts = self.deferred.setdefault((pool, workload), [0, 0])
        counts[0] += 1
        counts[1] += instances

    def deferred_notes(self) -> list[Note]:
        """One ``launch-deferred`` event per pool and workload whose launches the pass did not try."""
        return [Note(str(EventKind.LAUNCH_DEFERRED), "the pool refused a launch for capacity earlier in this pass; "
                     "the next pass decides again", workload, pool,
                     attributes={"launches": launches, "instances": instances})
                for (pool, workload), (launches, instances) in sorted(self.deferred.items())]


class Actuator:
    """Executes decisions for one partition."""

    def __init__(self, desired: Desired, provider: Provider, store: Store, conn: Any, revoker: Revoker, *,
                 webhook: Callable[[dict[str, Any]], None] | None = None,
                 agent_bundle: tuple[bytes, bytes] | None = None,
                 agent_credentials: AgentCredentials | None = None) -> None:
        self.desired, self.s = desired, desired.settings
        self.provider, self.store, self.conn, self.revoker = provider, store, conn, revoker
        self.webhook, self.agent_bundle, self.agent_credentials = webhook, agent_bundle, agent_credentials

    def apply(self, decision: Decision, now: datetime) -> PassReport:
        """Carry out one pass's actions in order, then record the pass (safety gate, refused pools, events, cycle row);
        the report says what was launched, terminated and held."""
        run = _Run()
        for action in decision.actions:
            self._one(action, run, now)
        if decision.gated is not None:
            decision.memory.safety.done(decision.gated, run.launched, run.terminated, now)
        decision.memory.refused_pools.update(dict.fromkeys(run.full, now))
        run.notes += run.deferred_notes()
        self.store.emit([self._event(n, now) for n in run.notes])
        self.store.cycle(self.s.holder, now, decision.read_only, run.launched, run.terminated, decision.held,
                         decision.generation)
        quiet = decision.quiet and not run.notes and not run.launched and not run.terminated
        return PassReport(True, decision.read_only, decision.generation, run.launched, run.terminated, decision.held,
                          run.throttled, tuple(n.kind for n in run.notes), decision.requeue_after, quiet)

    def _one(self, action: object, run: _Run, now: datetime) -> None:
        if isinstance(action, Publish):
            run.notes.append(action.note)
        elif isinstance(action, Revoke):
            run.notes.append(self._revoke(action.instance_id, action.workload, action.pool, action.cause, now))
        elif isinstance(action, WritePlans):
            self.store.write_plans(action.plans, action.generation, action.replanned)
        elif isinstance(action, WriteClaims):
            self.store.write_claims(list(action.claims), list(action.refused))
        elif isinstance(action, StartFallback):
            self._fallback(action, run, now)
        elif isinstance(action, AskApproval):
            self._ask(action, now)
        elif isinstance(action, RecordShortfall):
            event = self._event(Note("shortfall", action.cause, action.workload, attributes={"units": action.units}),
                                now)
            self.store.expire_approval(action.workload, now, event)
        elif isinstance(action, RecordVerdict):
            self._verdict(action, run, now)
        elif isinstance(action, OpenBreaker):
            self.store.breaker(True, action.reason, now)
        elif isinstance(action, Place | Terminate):
            self._act(action, run, now)
        else:
            raise TypeError(f"unknown action {action!r}")

    def _act(self, action: Place | Terminate, run: _Run, now: datetime) -> None:
        key = action.launch.launch_key if isinstance(action, Place) else action.instance.instance_id
        if run.throttled or (key and key in run.done):
            return
        if isinstance(action, Place) and action.launch.key.pool in run.full:
            # the pool refused a launch for capacity this pass: no token on another into it, said in one event
            run.defer(action.launch.key.pool, action.launch.workload, action.launch.count)
            return
        run.done.add(key)
        try:
            if isinstance(action, Place):
                run.launched += len(self._launch(action.launch, now, list(action.replacing), run.full))
            else:
                run.terminated += self._terminate(action, now)
        except Throttled:
            run.throttled = True

    # --- the provider ---------------------------------------------------------------------------------
    def _launch(self, a: Launch, now: datetime, replacing: list[str], full: set[str]) -> list[Observed]:
        """One multi-create; a capacity refusal adds the pool to ``full`` (the pass's refused pools)."""
        contract = self.desired.contract(a.workload)
        password = secrets.token_urlsafe(24) if self.agent_credentials is not None else None
        try:
            user_data = self._user_data(contract, a.key.pool, password)
        except UserDataError as exc:
            self.store.emit([self._event(Note("launch-failed", str(exc), a.workload, a.key.pool, attributes={
                "count": a.count, "launch_key": a.launch_key, "code": exc.code}), now)])
            return []
        agent = None if self.s.agent is None else choose_agent(self.s.agent, a.launch_key)  # a retry: the same
        request = LaunchRequest(
            pool_id=a.key.pool, count=a.count,
            owner=OwnerTags(workload=a.workload, pool=a.key.pool, partition=self.s.partition, generation=a.generation),
            metadata={"sco_purpose": str(a.key.purpose), "sco_tier": a.tier, "sco_launch_key": a.launch_key,
                      "sco_contract": contract.ref if contract else "",
                      **({"sco_agent_version": agent.version} if agent else {})},
            user_data=user_data, image=agent.image if agent else None)
        try:
            made = self.provider.launch(request)
        except Throttled:
            raise
        except (CapacityUnavailable, QuotaExceeded, NotFound) as exc:
            if isinstance(exc, CapacityUnavailable):
                full.add(a.key.pool)
            self.store.emit([self._event(Note("launch-failed", str(exc), a.workload, a.key.pool, attributes={
                "count": a.count, "launch_key": a.launch_key}), now)])
            return []
        obs = observe(made)
        minted = self._mint(obs, password) if user_data is not None else 0
        cause = (f"replacement of {', '.join(replacing[:5])}" if replacing else f"plan generation {a.generation}")
        events = [self._event(Note("placed", cause, a.workload, a.key.pool, attributes={
            "count": len(made), "purpose": str(a.key.purpose), "launch_key": a.launch_key,
            "instances": ",".join(o.instance_id for o in obs)[:1000], "agent_credentials": minted,
            "agent_version": agent.version if agent else None, "bundle_generation": self._bundle_generation()}),
            now)]
        if replacing:
            events.append(self._event(Note("replaced", cause, a.workload, a.key.pool, attributes={
                "replaced": ",".join(replacing), "count": len(made)}), now))
        self.store.launched(obs, events, now)
        return obs

    def _terminate(self, t: Terminate, now: datetime) -> int:
        o = t.instance
        try:
            self.provider.terminate(o.instance_id)
        except (NotFound, NotOwned) as exc:
            self.store.emit([self._event(Note("contract-breach", f"termination refused: {exc}", o.workload, o.pool,
                                              o.instance_id), now)])
            return 0
        self.store.terminated(o.instance_id, self._event(Note("terminated", t.reason, o.workload, o.pool, o.instance_id,
                                                              attributes={"purpose": str(o.purpose)}), now))
        self.store.emit([self._event(self._revoke(o.instance_id, o.workload, o.pool, f"terminated ({t.reason})",
                                                  now), now)])
        return 1

    def _revoke(self, instance_id: str, workload: str | None, pool: str | None, cause: str, now: datetime) -> Note:
        """Revoke the node's credentials now, not at expiry; the event says what the revoker really did, and a
        failure is tried again on a later pass."""
        sid = spiffe_id(self.s.trust_domain, self.s.region, instance_id)
        try:
            done = self.revoker.revoke(instance_id, sid)
        except Exception as exc:
            log.warning("revocation for %s failed: %s", instance_id, exc)
            done = Revocation(False, "failed", f"{type(exc).__name__}: {exc}"[:300])
        if done.reason == "failed":  # retried on a later pass (Observation.unrevoked)
            self.store.revocation_failed(instance_id, now, done.detail)
        else:
            self.store.revocation_settled(instance_id)
        return Note("credentials-revoked", cause, workload, pool, instance_id,
                    attributes={"spiffe_id": sid, "ok": done.ok, "reason": done.reason, "detail": done.detail})

    # --- fallback (ADR-23): reserve, launch, consume or release; ask; record shortfall ------------------
    def _fallback(self, action: StartFallback, run: _Run, now: datetime) -> None:
        fl = action.launch
        if fl.pool_id in run.full:
            run.defer(fl.pool_id, fl.workload, fl.count)
            return   # refused for capacity this pass: nothing reserved, no token spent
        try:
            rid = ledger.reserve(self.conn, fl.workload, self.s.region, fl.amount_eur, action.cap_eur, now,
                                 action.approver)
        except ledger.CapExceeded as exc:
            run.notes.append(Note("shortfall", str(exc), fl.workload))
            return
        a = Launch(SlotKey(fl.workload, fl.pool_id, Purpose.FALLBACK), fl.count, self.s.partition, action.generation,
                   fl.tier, fl.cause, f"{self.s.partition}/{fl.workload}/{fl.pool_id}/fallback/{rid}")
        try:
            made = self._launch(a, now, [], run.full)
        except (Throttled, ProviderError):
            made = []
        if made:
            ledger.consume(self.conn, rid, fl.workload, self.s.region, [o.instance_id for o in made], fl.pool_id,
                           fl.amount_eur, now)
            run.notes.append(Note("fallback-started", fl.cause, fl.workload, fl.pool_id, attributes={
                "instances": len(made), "reserved_eur": str(fl.amount_eur), "reservation": str(rid)}))
        else:
            ledger.release(self.conn, rid)

    def _ask(self, action: AskApproval, now: datetime) -> None:
        ar = action.request
        ev = self._event(Note("approval-requested", ar.cause, ar.workload, attributes={
            "approver": ar.approver, "units": ar.units, "options": json.dumps(ar.options)}), now)
        self.store.request_approval(ar.workload, ar.approver, ar.options, now, ev)
        if self.webhook is not None:
            try:
                self.webhook(alertmanager_payload(self.s, ar.workload, ar.approver, ar.options, ar.cause, now))
            except Exception as exc:
                log.warning("approval webhook failed: %s", exc)

    def _verdict(self, action: RecordVerdict, run: _Run, now: datetime) -> None:
        a, v = action.answer, action.verdict
        kind = ("approval-refused" if not v.accepted else "approval-granted" if v.decision == "grant"
                else "approval-denied")
        signer = a.signed.decision.approver if a.signed is not None else ""
        ev = self._event(Note(kind, v.message, a.request.workload, attributes={
            "request": a.request.request_id, "decision": a.decision_id, "code": v.code, "approver": signer,
            "granted_eur": str(v.granted_eur)}), now)
        approval_store.record_verdict(self.conn, a, v, now, ev, self.store.actor)
        if v.accepted and v.decision == "deny":
            units = max((int(o.get("units", "0")) for o in a.request.options), default=0)
            run.notes.append(Note("shortfall", f"{signer} denied fallback beyond the 24 h cap", a.request.workload,
                                  attributes={"units": units}))

    # --- formatting -----------------------------------------------------------------------------------
    def _event(self, n: Note, now: datetime) -> Event:
        versions = {c.workload: str(c.version) for c in self.desired.contracts.values()}
        return note_event(n, region=self.s.region, partition=self.s.partition, now=now, contract_versions=versions)

    def _user_data(self, contract: Contract | None, pool: str, password: str | None) -> str | None:
        """The cloud-config that boots the agent (``userdata.render``); None without an agent bundle."""
        if self.agent_bundle is None or contract is None:
            return None
        bundle, sig = self.agent_bundle
        return render(LaunchUserData(
            region=self.s.region, partition=self.s.partition, pool=pool, scheduler=str(contract.scheduler),
            bundle=bundle, bundle_sig=sig, nats_urls=self.s.nats_urls, nats_password=password,
            metadata_url=self.s.metadata_url, distributor_url=self.s.distributor_url))

    def _bundle_generation(self) -> int | None:
        """The generation of the agent bundle the launches carry (None without one)."""
        if self.agent_bundle is None:
            return None
        try:
            return int(json.loads(self.agent_bundle[0]).get("generation", 0))
        except (ValueError, AttributeError, TypeError):
            return None

    def _mint(self, made: list[Observed], password: str | None) -> int:
        """Register each launched instance's own NATS user with the launch's password; how many were."""
        if self.agent_credentials is None or password is None:
            return 0
        minted = 0
        for o in made:
            try:
                self.agent_credentials.mint(self.s.region, o.instance_id, password, partition=self.s.partition)
                minted += 1
            except Exception as exc:  # the agent still has its metadata poll; the event counts the miss
                log.warning("no NATS credential for %s: %s", o.instance_id, exc)
        return minted
