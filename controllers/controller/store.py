"""The controller's reads and writes on PostgreSQL (psycopg 3 connection, autocommit off per transaction).

A cache of convenience (ADR-11): instance rows, plans, cycles, breakers, approvals; the inputs written by
others (rankings, correlation groups, exclusions in force). Events go through the outbox in the same
transaction as the state they describe (``stores.outbox.enqueue``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from contracts.events import Event
from controllers.planning import WorkloadPlan
from stores.outbox import enqueue

from . import reads
from .exclusion import Exclusion
from .fallback import Approval
from .model import Gone, InputsInForce, Note, Observed
from .pgbatch import atomic, commit, pipelined

__all__ = ["InputsInForce", "Store", "close_breaker", "idle_counter", "open_breakers", "plan_json"]


def plan_json(p: WorkloadPlan) -> dict[str, Any]:
    """A workload plan as the JSON the ``plans`` table stores (amounts as strings, so no precision is lost)."""
    return {"workload": p.workload, "claim": p.claim_digest, "strategy": str(p.strategy),
            "wanted_units": p.wanted_units, "floor_units": p.floor_units, "shortfall_units": p.shortfall_units,
            "cost_eur_h": str(p.cost_eur_h), "depth_premium_eur_h": str(p.depth_premium_eur_h),
            "allocations": [{"pool": a.pool_id, "purpose": str(a.purpose), "units": a.units,
                             "instances": a.instances} for a in p.allocations], "notes": list(p.notes)}


class Store:
    """The partition's reads and writes. A list of ids goes as one text the server splits (``reads.texts``): a pass
    sends the listing's ids several times, and psycopg dumps a list element by element."""

    def __init__(self, conn: Any, region: str, partition: str, actor: str = "sco-controller",
                 operator: str | None = None) -> None:
        self.conn, self.region, self.partition, self.actor = conn, region, partition, actor
        self.raised_by = operator or actor      # recorded on approval requests: it may not approve them (ADR-30)

    # --- inputs written by others ------------------------------------------------------------------
    def inputs(self, now: datetime) -> InputsInForce:
        """Rankings, correlation groups and exclusions in force at ``now``, in one round trip."""
        with pipelined(self.conn):   # the three sent before any is read: one round trip
            return reads.send_inputs(self.conn, self.region, now)()

    def others_launched_since(self, at: datetime | None) -> dict[str, int]:
        """The other partitions' live instances launched at or after ``at`` (the rate card's time), per pool: the
        room the card still counts as free, though they hold it (two partitions planned the same room
        and the second's launches failed). The partition's own come from the provider's listing."""
        return reads.send_others_launched_since(self.conn, self.region, self.partition, at)()

    def exclusions(self) -> tuple[dict[str, int], dict[str, Exclusion]]:
        """The region's offence count per pool, and the exclusions whose exclusion and probation windows are set."""
        offences: dict[str, int] = {}
        active: dict[str, Exclusion] = {}
        with atomic(self.conn):
            for pool, reason, at, until, prob, n, evidence, cause in self.conn.execute(
                    "SELECT pool, reason, excluded_at, until, probation_until, offences, evidence, cause FROM "
                    "exclusions WHERE region = %s", (self.region,)):
                offences[pool] = int(n)
                if until is not None and prob is not None:
                    active[pool] = Exclusion(pool, reason, at, until, prob, int(n), tuple(evidence or ()), cause)
        return offences, active

    def write_exclusion(self, ex: Exclusion, event: Event) -> None:
        """Record the pool's exclusion (replacing its previous one) and its event, in one transaction."""
        with atomic(self.conn):
            self.conn.execute(
                "INSERT INTO exclusions (region, pool, reason, source, excluded_at, until, probation_until, offences, "
                "evidence, cause) VALUES (%s, %s, %s, 'exclusion-watcher', %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (region, pool) DO UPDATE SET reason = excluded.reason, "
                "excluded_at = excluded.excluded_at, until = excluded.until, "
                "probation_until = excluded.probation_until, offences = excluded.offences, "
                "evidence = excluded.evidence, cause = excluded.cause",
                (self.region, ex.pool, ex.reason, ex.excluded_at, ex.until, ex.probation_until, ex.offences,
                 json.dumps(list(ex.evidence)), ex.cause))
            enqueue(self.conn, event, action="exclude", actor=self.actor)

    # --- instances ---------------------------------------------------------------------------------
    def rows(self, listed: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """The partition's instance rows; with ``listed`` (the instance ids the provider lists now) only the rows
        a pass can use: those not ended (terminated or lost) and those of the listed instances, whatever their
        state. Ended rows pile up for as long as the partition lives; a pass that read them all would slow down
        day after day. ``None``: every row (the first pass asks whether the partition ever had one)."""
        return reads.send_rows(self.conn, self.region, self.partition, listed)()

    def adopt(self, observed: Sequence[Observed], now: datetime) -> reads.Reader[list[str]]:
        """Rows for tagged instances that have none (after a crash between launch and write, or a rebuild), in one
        statement (none for no instance). Existing rows keep the ownership they recorded: that is what termination
        compares tags against. ``observed``: the listed instances a pass read no row of (the others have one). The
        reader returns the ids of the rows made."""
        if not observed:
            return reads.value([])
        cur = self.conn.execute(
            "INSERT INTO instances (instance_id, region, partition, pool, workload, plan_generation, state, "
            "purchase_model, provider_tags, launched_at, purpose, hall, name) SELECT u.id, %s, u.partition, u.pool, "
            "u.workload, u.generation, u.state, u.model, u.tags::jsonb, u.launched_at, u.purpose, u.hall, u.name "
            "FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[], %b::text[], %b::text[], "
            "%b::text[], %b::timestamptz[], %b::text[], %b::text[], %b::text[]) AS u(id, partition, pool, workload, "
            "generation, state, model, tags, launched_at, purpose, hall, name) "
            "WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.instance_id = u.id) "
            "ON CONFLICT (instance_id) DO NOTHING RETURNING instance_id",
            (self.region, [o.instance_id for o in observed], [o.partition for o in observed],
             [o.pool for o in observed], [o.workload for o in observed], [o.generation for o in observed],
             [state_of(o.status) for o in observed],
             ["reclaimable" if o.purpose == "reclaimable" else "guaranteed" for o in observed],
             [json.dumps({"workload": o.workload, "pool": o.pool, "partition": o.partition,
                          "generation": o.generation}) for o in observed],
             [o.launched_at or now for o in observed], [str(o.purpose) for o in observed],
             [o.hall for o in observed], [o.name for o in observed]))
        return lambda: [str(r[0]) for r in cur]

    def observe_states(self, observed: Sequence[Observed], idle_names: set[str], idle_cap: int | None = None
                       ) -> list[Gone]:
        """Refresh states and the idle-observation counters (``send_observe_states``) and return the rows that
        became ``lost``."""
        return self.send_observe_states(observed, idle_names, idle_cap)()

    def send_observe_states(self, observed: Sequence[Observed], idle_names: set[str], idle_cap: int | None = None
                            ) -> reads.Reader[list[Gone]]:
        """Refresh states and the idle-observation counters (reset when the scheduler reports work; counted up to
        ``idle_cap``, the breaker's threshold, past which more counting changes nothing it decides), in one
        statement; rows whose instance the provider no longer lists become ``lost`` — read back with the state
        they had (a notice seen, or none) and their launch time, so their credentials can be revoked (ADR-31)
        and a loss without notice charged its wasted work. The two statements are sent; the reader waits.

        Only the rows that change are written: rewriting every listed row each pass (a new row version each)
        made this the costliest statement of a pass in PostgreSQL, and an idle fleet's counters then never
        stopped changing."""
        ids = reads.texts(o.instance_id for o in observed)
        cap = idle_counter(idle_cap)
        with atomic(self.conn):
            self.conn.execute(
                "UPDATE instances AS i SET state = u.state, updated_at = now(), idle_observations = CASE WHEN u.idle "
                f"THEN least(i.idle_observations + 1, %s) ELSE 0 END FROM unnest({reads.TEXTS}, {reads.TEXTS}, "
                f"{reads.FLAGS}) AS u(id, state, idle) WHERE i.instance_id = u.id AND i.state <> 'terminated' "
                "AND (i.state <> u.state OR i.idle_observations <> CASE WHEN u.idle "
                "THEN least(i.idle_observations + 1, %s) ELSE 0 END)",
                (cap, ids, reads.texts(state_of(o.status) for o in observed),
                 reads.flags(o.name in idle_names for o in observed), cap))
            gone = self.conn.execute(
                "WITH g AS (SELECT instance_id, state FROM instances WHERE region = %s AND partition = %s AND "
                "state IN ('launching', 'running', 'draining') AND NOT EXISTS (SELECT 1 FROM unnest("
                f"{reads.TEXTS}) AS u(id) WHERE u.id = instance_id) FOR UPDATE) "
                "UPDATE instances AS i SET state = 'lost', updated_at = now() FROM g "
                "WHERE i.instance_id = g.instance_id "
                "RETURNING i.instance_id, coalesce(i.workload, ''), i.pool, g.state, i.launched_at",
                (self.region, self.partition, ids))
        # RETURNING comes in whatever order the join ran: sorted, so a pass's revocations and loss events are too
        return lambda: [Gone(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4])
                        for r in sorted(gone.fetchall(), key=lambda r: str(r[0]))]

    def launched(self, instances: Iterable[Observed], events: Sequence[Event], now: datetime) -> None:
        """Record instances the provider launched, as running rows with their events, committed at once."""
        with atomic(self.conn):
            for o in instances:
                self.conn.execute(
                    "INSERT INTO instances (instance_id, region, partition, pool, workload, plan_generation, state, "
                    "purchase_model, provider_tags, launched_at, purpose, hall, name) VALUES "
                    "(%s, %s, %s, %s, %s, %s, 'running', %s, %s, %s, %s, %s, %s) ON CONFLICT (instance_id) DO NOTHING",
                    (o.instance_id, self.region, o.partition, o.pool, o.workload, o.generation,
                     "reclaimable" if o.purpose == "reclaimable" else "guaranteed",
                     json.dumps({"workload": o.workload, "pool": o.pool, "partition": o.partition,
                                 "generation": o.generation}), now, str(o.purpose), o.hall, o.name))
            for e in events:
                enqueue(self.conn, e, action="launch", actor=self.actor)
        commit(self.conn)   # what the provider did is recorded before the pass asks it anything else

    def terminated(self, instance_id: str, event: Event) -> None:
        """Mark the instance terminated and queue its event, committed at once."""
        with atomic(self.conn):
            self.conn.execute("UPDATE instances SET state = 'terminated', updated_at = now() WHERE instance_id = %s",
                              (instance_id,))
            enqueue(self.conn, event, action="terminate", actor=self.actor)
        commit(self.conn)

    # --- revocation retries (ADR-31) ------------------------------------------------------------------
    def revocation_failed(self, instance_id: str, now: datetime, detail: str) -> None:
        """Retry the instance's revocation on a later pass: 10 s after the first failure, doubling, at most
        every 10 min (the row's ``revocation_next_at``)."""
        with atomic(self.conn):
            self.conn.execute(
                "UPDATE instances SET revocation_attempts = revocation_attempts + 1, revocation_error = %s, "
                "revocation_next_at = %s::timestamptz + least(interval '10 seconds' * power(2, revocation_attempts), "
                "interval '10 minutes') WHERE instance_id = %s", (detail[:500], now, instance_id))

    def revocation_settled(self, instance_id: str) -> None:
        """Nothing left to retry for the instance (revoked, already gone, or nothing configured to retry)."""
        with atomic(self.conn):
            self.conn.execute("UPDATE instances SET revocation_next_at = NULL WHERE instance_id = %s AND "
                              "revocation_next_at IS NOT NULL", (instance_id,))

    def revocations_due(self, now: datetime, limit: int = 100) -> list[Gone]:
        """Instances of the partition whose failed revocation is due for another attempt, oldest first."""
        return reads.send_revocations_due(self.conn, self.region, self.partition, now, limit)()

    # --- claims ------------------------------------------------------------------------------------
    def write_claims(self, claims: Sequence[tuple[str, str, int, str]], refused: Sequence[tuple[str, str, str, str]]
                     ) -> None:
        """``claims``: (workload, source, units, state); ``refused``: (item, source, workload-or-ref, reason).
        Claims of workloads no longer asking become ``satisfied``."""
        with atomic(self.conn), self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO claims (claim_id, workload, region, partition, source, units, state) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (claim_id) DO UPDATE SET units = excluded.units, "
                "state = excluded.state, updated_at = now()",
                [(f"{self.partition}/{w}", w, self.region, self.partition, src, units, state)
                 for w, src, units, state in claims])
            cur.executemany(
                "INSERT INTO claims (claim_id, workload, region, partition, source, units, state, reason) VALUES "
                "(%s, %s, %s, %s, %s, 0, 'refused', %s) ON CONFLICT (claim_id) DO NOTHING",
                [(f"{src}:{item}", w, self.region, self.partition, src, reason) for item, src, w, reason in refused])
            cur.execute("UPDATE claims SET state = 'satisfied', updated_at = now() WHERE region = %s AND "
                        "partition = %s AND state IN ('pending', 'placed') AND NOT (claim_id = ANY(%s))",
                        (self.region, self.partition, [f"{self.partition}/{w}" for w, _, _, _ in claims]))

    # --- plans, cycles, events ---------------------------------------------------------------------
    def max_generation(self) -> int:
        """The partition's highest plan generation (0 before any plan)."""
        return reads.send_max_generation(self.conn, self.region, self.partition)()

    def write_plans(self, plans: Mapping[str, WorkloadPlan], generation: int, replanned: Iterable[str]) -> None:
        """Put the new plans of the ``replanned`` workloads in force at ``generation``, retiring their previous ones."""
        todo = [w for w in replanned if w in plans]
        if not todo:
            return
        with atomic(self.conn):
            for w in todo:
                self.conn.execute("UPDATE plans SET in_force = false WHERE workload = %s AND in_force", (w,))
                self.conn.execute(
                    "INSERT INTO plans (workload, generation, region, partition, plan, in_force) VALUES "
                    "(%s, %s, %s, %s, %s, true) ON CONFLICT (workload, generation) DO UPDATE SET plan = excluded.plan, "
                    "in_force = true", (w, generation, self.region, self.partition, json.dumps(plan_json(plans[w]))))

    def cycle(self, holder: str, now: datetime, read_only: bool, launched: int, terminated: int, held: int,
              generation: int) -> None:
        """Record one pass in ``controller_cycles``: who held the lease, whether it was read-only, what it changed."""
        with atomic(self.conn):
            self.conn.execute(
                "INSERT INTO controller_cycles (region, partition, holder, started_at, read_only, launched, "
                "terminated, held, generation) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (self.region, self.partition, holder, now, read_only, launched, terminated, held, generation))

    def emit(self, events: Sequence[Event], action: str | None = None) -> None:
        """Queue ``events`` on the outbox in one transaction; with ``action``, audited as the controller's."""
        if not events:
            return
        with atomic(self.conn):
            for e in events:
                enqueue(self.conn, e, action=action, actor=self.actor if action else None)

    def breaker(self, open_: bool, reason: str, now: datetime) -> None:
        """Open or close the partition's termination breaker, keeping when it first tripped."""
        with atomic(self.conn):
            self.conn.execute(
                "INSERT INTO breakers (region, partition, name, state, reason, tripped_at, updated_at) VALUES "
                "(%s, %s, 'termination', %s, %s, %s, now()) ON CONFLICT (region, partition, name) DO UPDATE SET "
                "state = excluded.state, reason = excluded.reason, tripped_at = coalesce(excluded.tripped_at, "
                "breakers.tripped_at), updated_at = now()",
                (self.region, self.partition, "open" if open_ else "closed", reason, now if open_ else None))

    def breaker_open(self) -> bool:
        """True when the partition's termination breaker is open."""
        return reads.send_breaker_open(self.conn, self.region, self.partition)()

    # --- approvals ---------------------------------------------------------------------------------
    def approvals(self) -> dict[str, Approval]:
        """Each workload's newest approval request in the region."""
        return reads.send_approvals(self.conn, self.region)()

    def request_approval(self, workload: str, approver: str | None, options: Sequence[Mapping[str, str]],
                         now: datetime, event: Event) -> uuid.UUID:
        """Ask for approval of a fallback's spend on ``workload`` (with its event); returns the request's id."""
        rid = uuid.uuid4()
        with atomic(self.conn):
            self.conn.execute(
                "INSERT INTO approval_requests (request_id, workload, region, approver, requested_at, options, "
                "raised_by) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (rid, workload, self.region, approver, now, json.dumps(list(options)), self.raised_by))
            enqueue(self.conn, event, action="approval", actor=self.actor)
        return rid

    def expire_approval(self, workload: str, now: datetime, event: Event) -> None:
        """Expire the workload's pending approval request and queue its event."""
        with atomic(self.conn):
            self.conn.execute("UPDATE approval_requests SET state = 'expired', answered_at = %s WHERE workload = %s "
                              "AND region = %s AND state = 'pending'", (now, workload, self.region))
            enqueue(self.conn, event)


def idle_counter(cap: int | None) -> int:
    """The most idle observations a row counts (``cap``; None: no bound short of the column's)."""
    return 2**31 - 1 if cap is None else max(1, cap)


def state_of(status: str) -> str:
    """The row state of a provider status."""
    return {"building": "launching", "active": "running", "notified": "draining", "deleted": "terminated",
            "error": "lost"}.get(str(status), "running")


def note_event(n: Note, *, region: str, partition: str, now: datetime, contract_versions: Mapping[str, str],
               drill: bool = False) -> Event:
    """The event a pass's note becomes, stamped with the region, partition, time and contract version in force."""
    return Event(kind=n.kind, time=now, region=region, partition=partition, pool=n.pool, instance=n.instance,
                 workload=n.workload, contract_version=contract_versions.get(n.workload or ""), cause=n.cause,
                 drill=drill, source="controller", attributes=dict(n.attributes))


def publish_contracts_in_force(conn: Any, payload: dict[str, Any]) -> int:
    """Write the verified controller bundle's contracts as the contracts in force (what this controller
    enforces; the analytics, reports and breach checks read them). Idempotent; one row per workload."""
    rows = 0
    with conn.transaction():
        for entry in payload.get("workloads", {}).values():
            conn.execute(
                "INSERT INTO contracts_in_force (workload, contract_version, tier, region, partition, spec, "
                "bundle_digest, effective_at) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, now()) "
                "ON CONFLICT (workload) DO UPDATE SET contract_version = excluded.contract_version, "
                "tier = excluded.tier, region = excluded.region, partition = excluded.partition, "
                "spec = excluded.spec, bundle_digest = excluded.bundle_digest, effective_at = now() "
                "WHERE contracts_in_force.bundle_digest IS DISTINCT FROM excluded.bundle_digest",
                (entry["workload"], f"{entry['workload']}@{entry['version']}", entry.get("tier"),
                 str(entry.get("partition", "")).split("/", 1)[0], entry.get("partition"), json.dumps(entry),
                 payload.get("source_digest")))
            rows += 1
    return rows


def close_breaker(conn: Any, region: str, partition: str, reason: str) -> datetime | None:
    """An operator's reset (ADR-12, ``sco controller reset-breaker``): close the partition's open termination
    breaker; the controller then paces the surplus in hand. Returns when it tripped, None when none was open."""
    row = conn.execute("UPDATE breakers SET state = 'closed', reason = %s, updated_at = now() WHERE region = %s "
                       "AND partition = %s AND name = 'termination' AND state = 'open' RETURNING tripped_at",
                       (reason, region, partition)).fetchone()
    return None if row is None else row[0]


def open_breakers(conn: Any, region: str) -> dict[str, datetime]:
    """The region's open termination breakers: partition -> when it tripped."""
    return reads.send_open_breakers(conn, region)()
