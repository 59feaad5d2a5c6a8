"""Observe: read the truth for one pass, decide nothing (ADR-10). The provider's instances by the partition's
owner tag, the instance rows (adopting tagged instances that have none and refreshing the idle counters — the
record of what was seen), the scheduler's work, the market (catalogue, rate card, reservations, quota) and the
inputs in force (rankings, groups, exclusions), the approvals and the spend committed.

A pass looks twice: a ``Glance`` (lease tenure, breaker row, listing, rows) is enough to decide to fail static on
a mass loss; only when the pass goes on does ``look`` record the listing and read the rest. What it fills
(``Glance``, ``Market``, ``Observation``) is the model's: ``decide`` never imports this module.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from contracts.pools import Pool
from contracts.provider import Instance, Provider

from . import approval_store, ledger, reads
from .claims import ClaimSource
from .model import Glance, Market, Observation, Observed, Purpose
from .pgbatch import commit
from .store import Store, idle_counter, state_of

__all__ = ["Observer", "observe"]


def observe(instances: Sequence[Instance], seen: dict[int, tuple[Instance, Observed | None]] | None = None
            ) -> list[Observed]:
    """The instances that carry our owner tags, as the controller sees them. ``seen`` (the observer's, replaced
    in place by this listing's): what each listed ``Instance`` object was seen as the last time — a provider that
    hands out the same immutable object for an instance whose state did not change (the simulated region) is not
    converted again; the object itself is kept, so its id is never another's."""
    out = []
    memo: dict[int, tuple[Instance, Observed | None]] = {}
    before = seen or {}
    for i in instances:
        last = before.get(id(i))
        o = last[1] if last is not None and last[0] is i else _observed(i)
        memo[id(i)] = (i, o)
        if o is not None:
            out.append(o)
    if seen is not None:
        seen.clear()
        seen.update(memo)
    return out


def _observed(i: Instance) -> Observed | None:
    owner = i.owner
    if owner is None:
        return None
    return Observed(i.instance_id, i.name, owner.workload, owner.pool, owner.partition, owner.generation,
                    Purpose(i.metadata.get("sco_purpose", "reclaimable")), str(i.status), i.hall or "",
                    i.launched_at, i.metadata.get("sco_tier", ""))


class Observer:
    """The reads of a pass (and the recording of what was seen) for one partition."""

    def __init__(self, provider: Provider, store: Store, conn: Any, source: ClaimSource,
                 idle_cap: int | None = None) -> None:
        self.provider, self.store, self.conn, self.source = provider, store, conn, source
        self.idle_cap = idle_cap   # idle observations are counted up to the breaker's threshold
        self.rankings = reads.RankingMemo()   # the rankings in force, read again when the server's version changes
        self._catalogue: dict[str, Pool] | None = None
        self._seen: dict[int, tuple[Instance, Observed | None]] = {}   # the last listing, as observed (a memo)
        self.notices: dict[str, deque[datetime]] = defaultdict(deque)   # workload -> notice times (breach rate)

    def record_notice(self, workload: str, at: datetime) -> None:
        """Fed by the waker (another thread) from lifecycle events: the breach-rate signal."""
        self.notices[workload].append(at)

    def glance(self, tenure: int | None, now: datetime, *, breach_window: timedelta, want_generation: bool) -> Glance:
        """The first look (one round trip in pipeline mode: the statements are sent before any is read)."""
        st, c = self.store, self.conn
        base = reads.send_max_generation(c, st.region, st.partition) if want_generation else None
        breaker_open = reads.send_breaker_open(c, st.region, st.partition)
        listed = observe(self.provider.list_instances({"partition": st.partition}), self._seen)
        # the first pass reads every row (``begin``: did the partition ever hold an instance?); later passes
        # only the rows a pass uses (``Store.rows``)
        rows = reads.send_rows(c, st.region, st.partition, None if want_generation else [o.instance_id for o in listed])
        counts, ages_at = self._notices_since(now - breach_window)
        return Glance(tenure, breaker_open(), base() if base else None, tuple(listed), rows(), counts,
                      None if ages_at is None else ages_at + breach_window)

    def _notices_since(self, cutoff: datetime) -> tuple[dict[str, int], datetime | None]:
        """Forget notices older than the window (oldest first, as they came) and count the rest; the oldest kept."""
        out = {}
        oldest: datetime | None = None
        for workload, q in list(self.notices.items()):
            while q and q[0] <= cutoff:
                q.popleft()
            out[workload] = len(q)
            if q and (oldest is None or q[0] < oldest):
                oldest = q[0]
        return out, oldest

    def look(self, glance: Glance, now: datetime) -> Observation:
        """Record the listing and read the rest: the provider first, then every statement sent before any result is
        read (one round trip in pipeline mode). The server runs them in order: the rows read are those the
        listing's record just refreshed — computed from the glance's rows and the ids adopted (``recorded``), not read
        again."""
        st, c = self.store, self.conn
        items = tuple(self.source.work())
        idle = self.source.idle_nodes()
        card, reserved, headroom, card_at = self._offer()
        adopted = st.adopt([o for o in glance.instances if o.instance_id not in glance.rows], now)   # others have one
        gone = st.send_observe_states(glance.instances, idle, self.idle_cap)
        inputs = reads.send_inputs(c, st.region, now, self.rankings)
        others = reads.send_others_launched_since(c, st.region, st.partition, card_at)
        approvals = reads.send_approvals(c, st.region)
        committed = ledger.send_committed(c, now)
        fallback = reads.send_fallback_launched(c, st.region, now - timedelta(minutes=1))
        answers = approval_store.send_unjudged(c, st.region)
        unrevoked = reads.send_revocations_due(c, st.region, st.partition, now)
        commit(c)   # the listing's record committed, every result back: one round trip
        market = Market(self._pools(), card, reserved, headroom, inputs(), card_at, others())
        rows = recorded(glance, idle, adopted(), self.idle_cap)
        return Observation(glance, rows, tuple(gone()), items, market, approvals(), committed(), fallback(),
                           tuple(answers()), tuple(unrevoked()))

    def _pools(self) -> dict[str, Pool]:
        if self._catalogue is None:
            self._catalogue = {p.pool_id: p for p in self.provider.catalogue().pools}
        return self._catalogue

    def _offer(self) -> tuple[dict[str, int], dict[str, int], int, datetime | None]:
        """The region's offer from the provider: the rate card's free instances per pool, the reservations' free
        instances per pool, the guaranteed quota's headroom and when the card was taken."""
        self._pools()
        rate_card = self.provider.rate_card()
        card = {e.pool_id: e.free_instances for e in rate_card.entries}
        reserved: dict[str, int] = {}
        for r in self.provider.reservations():
            reserved[r.pool_id] = reserved.get(r.pool_id, 0) + r.free
        headroom = min(self.provider.quota_headroom().instances_free, 10_000)
        return card, reserved, headroom, rate_card.time


_ACTIVE = ("launching", "running", "draining")   # a row in one of these whose instance is not listed becomes lost
_ENDED = ("terminated", "lost")


def recorded(glance: Glance, idle: set[str], adopted: Sequence[str], idle_cap: int | None = None
             ) -> dict[str, dict[str, Any]]:
    """The rows ``Store.rows`` would read once a look recorded the listing (``Store.adopt`` made the rows
    ``adopted``, ``Store.observe_states`` refreshed the listed ones and ended the vanished), computed from the rows
    the glance read — the statements' effect on them, not a second read of the same rows: a listed instance's row
    takes its status's state (unless terminated) and counts one more idle observation (up to ``idle_cap``) or
    none; an unlisted launching, running or draining row is lost and, like every ended row not listed, not read;
    a row made now has the instance's tags, its state and one idle observation if its node is idle."""
    listed = {o.instance_id: o for o in glance.instances}
    cap = idle_counter(idle_cap)
    out: dict[str, dict[str, Any]] = {}
    for iid, r in glance.rows.items():
        o = listed.get(iid)
        if o is not None:
            out[iid] = dict(r) if r["state"] == "terminated" else {
                **r, "state": state_of(o.status), "idle": min(int(r["idle"]) + 1, cap) if o.name in idle else 0}
        elif r["state"] not in _ACTIVE and r["state"] not in _ENDED:
            out[iid] = dict(r)
    for iid in adopted:
        o = listed[iid]
        out[iid] = dict(zip(reads.ROW_COLUMNS, (o.workload, o.pool, o.partition, o.generation, state_of(o.status),
                                                1 if o.name in idle else 0, str(o.purpose)), strict=True))
    return out
