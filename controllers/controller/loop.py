"""The level-triggered controller for one partition (ADR-10): each pass re-reads the truth — the provider's
instances with our tags, the scheduler's work, the inputs in force — plans, diffs and acts within the bounds
(ADR-12). Messages (notices, losses) only wake it early. Every decision is an event with a cause through the
outbox, in the transaction that records it. The clock is injected; ``step`` is synchronous and testable.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.events import Event
from contracts.pools import Pool, PurchaseModel
from contracts.provider import Clock, Instance, LaunchRequest, OwnerTags, Provider
from contracts.provider_errors import CapacityUnavailable, NotFound, NotOwned, ProviderError, QuotaExceeded, Throttled
from contracts.schema import Contract
from controllers.planning import PlannerConfig, PlanSet, PoolState, plan, pool_states, units_per_instance

from . import ledger
from .breaker import Safety, SafetyConfig
from .claims import ClaimSource, normalise
from .fallback import FallbackConfig, GuaranteedOption, Need, arbitrate
from .floor_keeper import FloorConfig, FloorKeeper
from .model import Launch, Note, Observed, Purpose, SlotKey, Terminate
from .reconcile import desired_slots, diff
from .revocation import LoggingRevoker, Revoker, spiffe_id
from .store import Store, note_event

__all__ = ["Controller", "ControllerSettings", "PassReport", "observe"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerSettings:
    region: str
    partition: str                       # "<region>/<cluster>"
    holder: str = "controller"
    lease_ttl: timedelta = timedelta(seconds=15)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    fallback: FallbackConfig = field(default_factory=FallbackConfig)
    floor: FloorConfig = field(default_factory=FloorConfig)
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    breach_window: timedelta = timedelta(hours=1)
    mass_loss_share: float = 0.10        # running instances vanishing unannounced in one pass that mean "stop"
    mass_loss_min: int = 5
    trust_domain: str = "sco.internal"
    nats_urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class PassReport:
    leader: bool
    read_only: bool = False
    generation: int = 0
    launched: int = 0
    terminated: int = 0
    held: int = 0
    throttled: bool = False
    events: tuple[str, ...] = ()


def observe(instances: Sequence[Instance]) -> list[Observed]:
    out = []
    for i in instances:
        owner = i.owner
        if owner is None:
            continue
        out.append(Observed(i.instance_id, i.name, owner.workload, owner.pool, owner.partition, owner.generation,
                            Purpose(i.metadata.get("sco_purpose", "reclaimable")), str(i.status), i.hall or "",
                            i.launched_at, i.metadata.get("sco_tier", "")))
    return out


class Controller:
    def __init__(self, settings: ControllerSettings, provider: Provider, conn: Any, source: ClaimSource,
                 contracts: Mapping[str, Contract], clock: Clock, *, revoker: Revoker | None = None,
                 webhook: Callable[[dict[str, Any]], None] | None = None,
                 agent_bundle: tuple[bytes, bytes] | None = None,
                 lease: Callable[[Any, str, str, str, datetime, timedelta], Any] | None = None) -> None:
        from . import lease as lease_mod

        self.s = settings
        self.provider = provider
        self.store = Store(conn, settings.region, settings.partition, actor=settings.holder)
        self.conn = conn
        self.source = source
        self.contracts = {k: c for k, c in contracts.items() if c.partition == settings.partition}
        self.clock = clock
        self.revoker = revoker or LoggingRevoker()
        self.webhook = webhook
        self.agent_bundle = agent_bundle
        self._lease = lease or lease_mod.acquire
        self.safety = Safety(settings.partition, settings.safety)
        self.floor = FloorKeeper(settings.floor)
        self.previous: PlanSet | None = None
        self.notices: dict[str, deque[datetime]] = defaultdict(deque)   # workload -> notice times (breach rate)
        self.short_since: dict[str, datetime] = {}
        self.healthy_since: dict[str, datetime] = {}
        self.last_return: dict[str, datetime] = {}
        self.refused: set[str] = set()
        self._catalogue: dict[str, Pool] | None = None
        self._tenure: int | None = None
        self._mass_alarm = False

    # --- inputs --------------------------------------------------------------------------------------
    def record_notice(self, workload: str, at: datetime) -> None:
        """Fed by the waker from lifecycle events: the breach-rate signal."""
        self.notices[workload].append(at)

    def _pools(self) -> dict[str, Pool]:
        if self._catalogue is None:
            self._catalogue = {p.pool_id: p for p in self.provider.catalogue().pools}
        return self._catalogue

    def _pool_states(self, observed: Sequence[Observed], now: datetime) -> list[PoolState]:
        pools = self._pools()
        card = {e.pool_id: e.free_instances for e in self.provider.rate_card().entries}
        ours: dict[str, int] = defaultdict(int)
        for o in observed:
            if o.live:
                ours[o.pool] += 1
        reserved: dict[str, int] = defaultdict(int)
        for r in self.provider.reservations():
            reserved[r.pool_id] += r.free
        headroom = min(self.provider.quota_headroom().instances_free, 10_000)
        available = {}
        for pid, p in pools.items():
            if p.purchase_model is PurchaseModel.COMMITTED:
                free = reserved[pid]
            elif p.purchase_model is PurchaseModel.GUARANTEED:
                free = card.get(pid, headroom)
            else:
                free = card.get(pid, 0)
            available[pid] = free + ours[pid]
        inputs = self.store.inputs(now)
        lost = self.floor.lost_pools({pid: p.hall for pid, p in pools.items()})
        for pid in lost:  # a lost hall lends nothing, guaranteed capacity included (the floor moves out)
            available[pid] = 0
        states = pool_states(pools.values(), available, excluded=inputs.excluded | lost, probation=inputs.probation)
        return [replace(st, score=inputs.scores.get(st.pool_id, st.score), group=inputs.groups.get(st.pool_id, ""))
                for st in states]

    def _event(self, n: Note, now: datetime) -> Event:
        versions = {c.workload: str(c.version) for c in self.contracts.values()}
        return note_event(n, region=self.s.region, partition=self.s.partition, now=now, contract_versions=versions)

    # --- one pass ------------------------------------------------------------------------------------
    def step(self) -> PassReport:
        now = self.clock.now()
        lease = self._lease(self.conn, self.s.region, self.s.partition, self.s.holder, now, self.s.lease_ttl)
        if lease is None:
            return PassReport(leader=False)
        tenure = getattr(lease, "generation", None)
        if self._tenure is not None and tenure != self._tenure:  # lost the lease and took it back: a new start
            self.safety = Safety(self.s.partition, self.s.safety)
        self._tenure = tenure
        if self.previous is None:
            base = self.store.max_generation()
            self.previous = PlanSet(generation=base, made_at=now, plans={})
        if self.store.breaker_open():  # the breaker row is the truth: an operator closes it (reset-breaker)
            self.safety.tripped = True
        elif self.safety.tripped:
            self.safety.reset()
        observed = observe(self.provider.list_instances({"partition": self.s.partition}))
        hold = self._mass_loss(observed, now)
        if hold is not None:
            return hold
        self.store.adopt(observed, now)
        gone = self.store.observe_states(observed, self.source.idle_nodes())
        rows = self.store.rows()
        notes: list[Note] = self.floor.update(observed, now)
        for iid, workload, pool in gone:  # reclaimed or lost: revoke its identity now, not at expiry (ADR-31)
            notes.append(self._revoke(iid, workload or None, pool, "instance gone from the provider's listing"))

        items = self.source.work()
        work = normalise(items, self.contracts)
        for item, note in work.refusals:
            if item.item_id not in self.refused:
                self.refused.add(item.item_id)
                notes.append(note)
        states = self._pool_states(observed, now)
        pool_halls = {st.pool_id: st.pool.hall for st in states}
        prev = self.previous
        affected = self.floor.affected(prev.plans, pool_halls)
        if affected:
            prev = replace(prev, plans={w: p for w, p in prev.plans.items() if w not in affected})
        planned = plan(work.claims, states, now, prev, self.s.planner)
        self.previous = planned
        self.store.write_plans(planned.plans, planned.generation, planned.replanned)
        sources = {i.contract_ref: i.source for i in items if i.contract_ref}
        self.store.write_claims(
            [(cl.workload, sources.get(cl.contract.ref, "scheduler"), cl.units,
              "pending" if planned.plans[cl.workload].shortfall_units else "placed") for cl in work.claims],
            [(item.item_id, item.source, item.contract_ref or "", n.cause) for item, n in work.refusals])
        tiers = {cl.workload: str(cl.contract.base_tier) for cl in work.claims}

        fallback_live: dict[SlotKey, int] = defaultdict(int)
        for o in observed:
            if o.purpose is Purpose.FALLBACK and o.live:
                fallback_live[o.key] += 1
        desired = desired_slots(planned.plans, fallback_live)
        d = diff(desired, observed, partition=self.s.partition, generation=planned.generation, tiers=tiers)
        returns = self._fallback(planned, observed, states, now, notes, dry=self.safety.read_only)
        candidates = [*d.surplus, *returns]
        agree = {iid: _agrees(r, o) for o in observed if (r := rows.get(o.instance_id)) for iid in [o.instance_id]}
        idle = {iid: int(r["idle"]) for iid, r in rows.items()}
        fleet = max(sum(1 for o in observed if o.live), sum(desired.values()))
        gated = self.safety.gate(d.launches, candidates, fleet_size=fleet, idle=idle, agree=agree, now=now)
        notes.extend(gated.notes)
        if gated.notes and self.safety.tripped:
            self.store.breaker(True, self.safety.trip_reason, now)

        launched = terminated = 0
        throttled = False
        if not gated.read_only:
            notices_by_slot: dict[SlotKey, list[str]] = defaultdict(list)
            for o in observed:
                if o.status == "notified":
                    notices_by_slot[o.key].append(o.instance_id)
            for a in gated.launches:
                try:
                    launched += len(self._launch(a, now, notices_by_slot.get(a.key, [])))
                except Throttled:
                    throttled = True
                    break
            for t in gated.terminations:
                if throttled:
                    break
                try:
                    terminated += self._terminate(t, now)
                except Throttled:
                    throttled = True
            notes.extend(self.floor.check(planned.plans, observed, now))
        held = gated.held_launches + gated.held_terminations
        self.safety.done(gated, launched, terminated, now)
        self.store.emit([self._event(n, now) for n in notes])
        self.store.cycle(self.s.holder, now, gated.read_only, launched, terminated, held, planned.generation)
        return PassReport(True, gated.read_only, planned.generation, launched, terminated, held, throttled,
                          tuple(n.kind for n in notes))

    def _mass_loss(self, observed: Sequence[Observed], now: datetime) -> PassReport | None:
        """Fail static (ADR-12): when many running instances vanish from the listing without a notice in one
        pass — a provider listing glitch, lost tags, or an unannounced hall loss — do not relaunch them all, do
        not revoke or terminate: open the breaker, raise the alarm and hold until the listing agrees again."""
        listed = {o.instance_id for o in observed}
        running = [iid for iid, r in self.store.rows().items() if r["state"] in ("running", "launching")]
        vanished = [iid for iid in running if iid not in listed]
        if len(vanished) < max(self.s.mass_loss_min, math.ceil(len(running) * self.s.mass_loss_share)):
            self._mass_alarm = False
            return None
        notes = []
        if not self._mass_alarm:
            self._mass_alarm = True
            self.safety.tripped = True
            self.safety.trip_reason = (f"{len(vanished)} of {len(running)} running instance(s) vanished from the "
                                       "provider's listing without a notice; holding all actions")
            self.store.breaker(True, self.safety.trip_reason, now)
            notes.append(Note("breaker-tripped", self.safety.trip_reason, attributes={
                "partition": self.s.partition, "vanished": len(vanished), "running": len(running),
                "kind": "mass-loss"}))
        self.store.emit([self._event(n, now) for n in notes])
        generation = self.previous.generation if self.previous else 0
        self.store.cycle(self.s.holder, now, True, 0, 0, len(vanished), generation)
        return PassReport(True, True, generation, held=len(vanished), events=tuple(n.kind for n in notes))

    # --- acting --------------------------------------------------------------------------------------
    def _user_data(self, contract: Contract | None, pool: str) -> str | None:
        if self.agent_bundle is None or contract is None:
            return None
        bundle, sig = self.agent_bundle
        return json.dumps({"apiVersion": "sco/v1", "kind": "AgentUserData", "region": self.s.region,
                           "partition": self.s.partition, "pool": pool, "instance": "{{ v1.instance_id }}",
                           "node_name": "{{ v1.local_hostname }}", "scheduler": str(contract.scheduler),
                           "nats_urls": list(self.s.nats_urls), "metadata_url": None, "distributor_url": None,
                           "bundle": base64.b64encode(bundle).decode(), "bundle_sig": sig.decode().strip()})

    def _contract(self, workload: str) -> Contract | None:
        found = [c for c in self.contracts.values() if c.workload == workload]
        return max(found, key=lambda c: c.version) if found else None

    def _launch(self, a: Launch, now: datetime, replacing: list[str]) -> list[Observed]:
        contract = self._contract(a.workload)
        request = LaunchRequest(
            pool_id=a.key.pool, count=a.count,
            owner=OwnerTags(workload=a.workload, pool=a.key.pool, partition=self.s.partition, generation=a.generation),
            metadata={"sco_purpose": str(a.key.purpose), "sco_tier": a.tier, "sco_launch_key": a.launch_key,
                      "sco_contract": contract.ref if contract else ""},
            user_data=self._user_data(contract, a.key.pool))
        try:
            made = self.provider.launch(request)
        except Throttled:
            raise
        except (CapacityUnavailable, QuotaExceeded, NotFound) as exc:
            self.store.emit([self._event(Note("launch-failed", str(exc), a.workload, a.key.pool, attributes={
                "count": a.count, "launch_key": a.launch_key}), now)])
            return []
        obs = observe(made)
        cause = (f"replacement of {', '.join(replacing[:5])}" if replacing else f"plan generation {a.generation}")
        events = [self._event(Note("placed", cause, a.workload, a.key.pool, attributes={
            "count": len(made), "purpose": str(a.key.purpose), "launch_key": a.launch_key,
            "instances": ",".join(o.instance_id for o in obs)[:1000]}), now)]
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
        self.store.emit([self._event(self._revoke(o.instance_id, o.workload, o.pool, f"terminated ({t.reason})"),
                                     now)])
        return 1

    def _revoke(self, instance_id: str, workload: str | None, pool: str | None, cause: str) -> Note:
        """Ban the node's SPIRE agent and revoke its OpenBao leases (best effort: expiry is the backstop)."""
        sid = spiffe_id(self.s.trust_domain, self.s.region, instance_id)
        ok = True
        try:
            self.revoker.ban_agent(sid)
            self.revoker.revoke_leases(f"auth/sco/node/{instance_id}/")
        except Exception as exc:
            log.warning("revocation for %s failed: %s", instance_id, exc)
            ok = False
        return Note("credentials-revoked", cause, workload, pool, instance_id, attributes={"spiffe_id": sid, "ok": ok})

    # --- fallback (ADR-23, ADR-24) ---------------------------------------------------------------------
    def _fallback(self, planned: PlanSet, observed: Sequence[Observed], states: Sequence[PoolState], now: datetime,
                  notes: list[Note], *, dry: bool) -> list[Terminate]:
        needs = []
        approvals = self.store.approvals()
        with self.conn.transaction():
            committed = ledger.committed_by_workload(self.conn, now)
        by_workload: dict[str, list[Observed]] = defaultdict(list)
        for o in observed:
            by_workload[o.workload].append(o)
        for w, p in planned.plans.items():
            contract = self._contract(w)
            if contract is None:
                continue
            q = self.notices[w]
            while q and q[0] <= now - self.s.breach_window:
                q.popleft()
            mine = by_workload.get(w, [])
            live = max(1, sum(1 for o in mine if o.live and o.purpose is not Purpose.FALLBACK))
            rate = 100.0 * len(q) / live / (self.s.breach_window.total_seconds() / 3600)
            declared = float(contract.max_interruption_rate_pct_h)
            breach = rate > declared
            if rate < declared / 2:
                self.healthy_since.setdefault(w, now)
            else:
                self.healthy_since.pop(w, None)
            per = {st.pool_id: units_per_instance(st.pool, contract) for st in states}
            notified_units = sum(per.get(o.pool, 1) for o in mine if o.status == "notified")
            if p.shortfall_units > 0:
                self.short_since.setdefault(w, now)
            else:
                self.short_since.pop(w, None)
            fb_units = sum(per.get(o.pool, 1) for o in mine if o.live and o.purpose is Purpose.FALLBACK)
            wanted = p.shortfall_units + (notified_units if breach else 0) - fb_units
            options = tuple(GuaranteedOption(st.pool_id, st.pool.rate_eur_h, per[st.pool_id], st.available_instances)
                            for st in states if st.pool.purchase_model is PurchaseModel.GUARANTEED and not st.excluded
                            and per.get(st.pool_id, 0) > 0 and st.available_instances > 0)
            needs.append(Need(
                workload=w, tier=str(contract.base_tier), units_wanted=max(0, wanted),
                short_since=self.short_since.get(w),
                breach=breach, deadline_risk=bool(contract.deadline) and p.shortfall_units > 0,
                spend_cap_eur=contract.spend_cap_24h_eur, committed_eur=committed.get(w, Decimal(0)),
                approver=contract.approver, options=options,
                fallback_running=tuple((o.instance_id, o.launched_at or now) for o in mine
                                       if o.purpose is Purpose.FALLBACK and o.live),
                healthy_since=self.healthy_since.get(w), last_return_at=self.last_return.get(w),
                approval=approvals.get(w), policy=str(contract.fallback_policy)))
        with self.conn.transaction():
            row = self.conn.execute("SELECT count(*) FROM instances WHERE region = %s AND purpose = 'fallback' AND "
                                    "launched_at > %s", (self.s.region, now - timedelta(minutes=1))).fetchone()
        left = max(0, self.s.fallback.launches_per_minute - int(row[0]))
        decisions = arbitrate(needs, now, launches_left=left, config=self.s.fallback)
        if dry:
            return []
        for fl in decisions.launches:
            contract = self._contract(fl.workload)
            assert contract is not None
            try:
                rid = ledger.reserve(self.conn, fl.workload, self.s.region, fl.amount_eur, contract.spend_cap_24h_eur,
                                     now, contract.approver)
            except ledger.CapExceeded as exc:
                notes.append(Note("shortfall", str(exc), fl.workload))
                continue
            a = Launch(SlotKey(fl.workload, fl.pool_id, Purpose.FALLBACK), fl.count, self.s.partition,
                       planned.generation, fl.tier, fl.cause,
                       f"{self.s.partition}/{fl.workload}/{fl.pool_id}/fallback/{rid}")
            try:
                made = self._launch(a, now, [])
            except (Throttled, ProviderError):
                made = []
            if made:
                ledger.consume(self.conn, rid, fl.workload, self.s.region, [o.instance_id for o in made], fl.pool_id,
                               fl.amount_eur, now)
                notes.append(Note("fallback-started", fl.cause, fl.workload, fl.pool_id, attributes={
                    "instances": len(made), "reserved_eur": str(fl.amount_eur), "reservation": str(rid)}))
            else:
                ledger.release(self.conn, rid)
        for ar in decisions.approvals:
            ev = self._event(Note("approval-requested", ar.cause, ar.workload, attributes={
                "approver": ar.approver, "units": ar.units, "options": json.dumps(ar.options)}), now)
            self.store.request_approval(ar.workload, ar.approver, ar.options, now, ev)
            if self.webhook is not None:
                try:
                    self.webhook(alertmanager_payload(self.s, ar.workload, ar.approver, ar.options, ar.cause, now))
                except Exception as exc:
                    log.warning("approval webhook failed: %s", exc)
        for w, units, cause in decisions.shortfalls:
            event = self._event(Note("shortfall", cause, w, attributes={"units": units}), now)
            self.store.expire_approval(w, now, event)
        returns = []
        by_id = {o.instance_id: o for o in observed}
        for w, iid in decisions.returns:
            returns.append(Terminate(by_id[iid], "return", by_id[iid].tier))
            self.last_return[w] = now
        return returns


def _agrees(row: Mapping[str, Any], o: Observed) -> bool:
    return (row["workload"] == o.workload and row["pool"] == o.pool and row["partition"] == o.partition
            and int(row["generation"] or 0) == o.generation)


def alertmanager_payload(s: ControllerSettings, workload: str, approver: str | None,
                         options: Sequence[Mapping[str, str]], cause: str, now: datetime) -> dict[str, Any]:
    """An Alertmanager webhook (version 4) body: one firing alert with the priced options as annotations."""
    labels = {"alertname": "SCOFallbackApproval", "severity": "page", "region": s.region, "partition": s.partition,
              "workload": workload, "approver": approver or ""}
    alert = {"status": "firing", "labels": labels, "annotations": {
        "summary": f"{workload}: fallback beyond the 24 h spend cap needs approval", "description": cause,
        "options": json.dumps(list(options))}, "startsAt": now.isoformat(), "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "", "fingerprint": hashlib.sha256(f"{s.region}/{workload}".encode()).hexdigest()[:16]}
    return {"version": "4", "groupKey": f"{{}}:{{workload=\"{workload}\"}}", "truncatedAlerts": 0, "status": "firing",
            "receiver": "sco-approvers", "groupLabels": {"workload": workload}, "commonLabels": labels,
            "commonAnnotations": alert["annotations"], "externalURL": "", "alerts": [alert]}
