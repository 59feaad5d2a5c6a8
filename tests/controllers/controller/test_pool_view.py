"""The pool states a pass builds, with the memo that keeps the last pass's: the same states as built
afresh, pass after pass, whatever changed — room, exclusions, probation, the ranking, groups, a full pool's card."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from controllers.controller.model import InputsInForce, Market, Observed, Purpose
from controllers.controller.pool_view import PoolMemo, pool_states_for
from testkit.builders import PARTITION, T0
from tests.controllers.controller.test_decide import POOLS, market

RECLAIMABLE = [p.pool_id for p in POOLS if p.purchase_model.value == "reclaimable"]


def _ours(pid: str, n: int, after_card: bool = True) -> list[Observed]:
    at = T0 + timedelta(minutes=1 if after_card else -1)
    return [Observed(f"{pid}-{i}", "node", "etl", pid, PARTITION, 1, Purpose.RECLAIMABLE, "active", "h1", at)
            for i in range(n)]


def _passes() -> list[tuple[Market, list[Observed], set[str]]]:
    """A pass after another, each changing something a pool's state is built from (or nothing)."""
    a, b = RECLAIMABLE[0], RECLAIMABLE[1]
    base = replace(market(free=50), free_at=T0)   # ours launched after the card: on it already, the room unchanged
    ranked = replace(base, inputs=InputsInForce({a: 0.9, b: 0.1}, {a: "g1"}, set(), set()))
    evidenced = replace(ranked, inputs=replace(ranked.inputs, exposure={a: (4.0, 10.0), b: (0.0, 80.0)}))
    regrouped = replace(evidenced, inputs=replace(evidenced.inputs, groups={a: "g1", b: "g1"}))
    forecast = replace(evidenced, inputs=replace(evidenced.inputs, forecast={b: 0.3}))
    return [(base, [], set()), (base, [], set()), (base, _ours(a, 3), set()),
            (replace(base, free={**base.free, a: 0}), _ours(a, 3), set()),
            (ranked, _ours(a, 3), set()), (ranked, _ours(a, 3), set()),
            (replace(ranked, inputs=replace(ranked.inputs, excluded={b}, probation={a})), [], set()),
            (replace(ranked, inputs=replace(ranked.inputs, full={a}, full_since={a: T0}, depth={a: (0.5, 1.0)})),
             _ours(a, 2), set()),
            (base, _ours(b, 1, after_card=False), {POOLS[0].pool_id}), (base, [], set()),
            # the reclaim evidence, then the groups it is shrunk towards (the same evidence object), then a forecast
            (evidenced, [], set()), (regrouped, [], set()), (forecast, [], set()), (evidenced, [], set())]


def test_with_the_memo_every_pass_gets_the_states_built_afresh() -> None:
    memo = PoolMemo()
    for mkt, ours, lost in _passes():
        assert pool_states_for(mkt, ours, lost, memo=memo) == pool_states_for(mkt, ours, lost)


def test_a_pass_whose_inputs_did_not_change_gets_the_last_passes_states_not_copies() -> None:
    memo = PoolMemo()
    mkt, ours, lost = _passes()[0]
    first = pool_states_for(mkt, ours, lost, memo=memo)
    again = pool_states_for(replace(mkt, inputs=InputsInForce({}, {}, set(), set())), list(ours), set(lost), memo=memo)
    assert all(x is y for x, y in zip(first, again, strict=True))
    moved = pool_states_for(mkt, _ours(RECLAIMABLE[0], 1, after_card=False), lost, memo=memo)   # one more room
    changed = [x.pool_id for x, y in zip(first, moved, strict=True) if x is not y]
    assert changed == [RECLAIMABLE[0]]
