"""Every feasibility rule, with a passing and a failing case. Each failing case checks the finding names
the code, the field, the value and a fix."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contracts.pools import Pool, PoolCatalogue, PurchaseModel
from contracts.settings import CompilerSettings
from testkit.builders import base
from tests.contracts.helpers import catalogue, codes, compile_doc


def only(findings: list, code: str):  # type: ignore[no-untyped-def]
    matching = [f for f in findings if f.code == code]
    assert len(matching) == 1, [f.render() for f in findings]
    return matching[0]


# FEAS001 -------------------------------------------------------------------------------------------

def test_a_drain_budget_of_115_seconds_needs_no_advisory() -> None:
    compiled, findings = compile_doc(base("T2", drain_budget_s=115))
    assert compiled is not None and "FEAS001" not in codes(findings)


def test_a_drain_budget_above_115_seconds_without_advisory_drain_is_refused() -> None:
    compiled, findings = compile_doc(base("T2", drain_budget_s=116))
    f = only(findings, "FEAS001")
    assert compiled is None and f.field == "drain_budget_s" and f.value == 116
    assert "advisory_drain: true" in f.fix


def test_a_drain_budget_above_115_seconds_with_advisory_drain_opted_in_compiles() -> None:
    compiled, findings = compile_doc(base("T2", drain_budget_s=150, advisory_drain=True))
    assert compiled is not None, [f.render() for f in findings]


# FEAS002 -------------------------------------------------------------------------------------------

def test_a_final_checkpoint_that_fits_the_drain_budget_compiles() -> None:
    # 3 GiB at 50 MiB/s = 61 s + 10 s overhead = 71 s <= 90 s
    compiled, findings = compile_doc(base("T2", checkpoint={"final_size_gib": 3}))
    assert compiled is not None and "FEAS002" not in codes(findings)


def test_a_final_checkpoint_too_large_for_the_drain_budget_is_refused_with_the_size_that_would_fit() -> None:
    # 5 GiB = 102 s + 10 s > 90 s
    compiled, findings = compile_doc(base("T2", checkpoint={"final_size_gib": 5}))
    f = only(findings, "FEAS002")
    assert compiled is None and f.field == "checkpoint.final_size_gib" and f.value == Decimal("5")
    assert "3.9 GiB" in f.fix and "113" in f.fix  # (90 - 10) s × 50 MiB/s = 3.9 GiB; 5 GiB needs 113 s


def test_the_final_checkpoint_rule_uses_the_measured_store_throughput_setting() -> None:
    slow = CompilerSettings(store_throughput_mib_s=Decimal("20"))
    compiled, findings = compile_doc(base("T2", checkpoint={"final_size_gib": 2}), settings=slow)
    assert compiled is None and "FEAS002" in codes(findings)


# FEAS003 -------------------------------------------------------------------------------------------

def test_a_requeue_unit_within_the_wasted_work_budget_compiles() -> None:
    compiled, findings = compile_doc(base("T3", max_unit_length_min=60), cat=calm_pools())
    assert compiled is not None and "FEAS003" not in codes(findings)


def calm_pools(rate_pct_h: str = "2") -> PoolCatalogue:
    return PoolCatalogue(pools=tuple(
        Pool(pool_id=f"p{i}", region="r1", hall=f"h{i % 3}", aggregate="a", sku_family="f", size="s", vcpu=8,
             memory_gib=32, purchase_model=PurchaseModel.RECLAIMABLE, rate_eur_h=Decimal("0.1"),
             guaranteed_rate_eur_h=Decimal("0.32"), interruption_rate_pct_h=Decimal(rate_pct_h))
        for i in range(10)))


def test_a_requeue_unit_above_the_wasted_work_budget_is_refused_with_the_longest_allowed_length() -> None:
    # T3 lets a contract shorten the unit only, so use a bespoke contract to ask for 4 hours. The pools'
    # observed 2 %/h is below the assumed 4 %/h, so the rule plans with 4 %/h.
    doc = base("bespoke", nearest_tier="T3", max_unit_length_min=240)
    compiled, findings = compile_doc(doc, cat=calm_pools())
    f = only(findings, "FEAS003")
    assert compiled is None and f.value == 240
    assert "90 min" in f.fix  # 3 % × 2 / 4 %/h = 1.5 h


def test_the_requeue_rule_plans_with_the_eligible_pools_observed_rate_when_it_is_higher() -> None:
    compiled, findings = compile_doc(base("T3", max_unit_length_min=60), cat=calm_pools("8"))
    f = only(findings, "FEAS003")  # 8 %/h × 1 h ÷ 2 = 4 % > 3 %
    assert compiled is None and "45 min" in f.fix


# FEAS004 -------------------------------------------------------------------------------------------

def test_a_workload_with_eight_or_more_eligible_pools_compiles() -> None:
    compiled, _ = compile_doc(base("T2"))
    assert compiled is not None and compiled.eligible_pools >= 8


def test_a_workload_with_fewer_than_eight_eligible_pools_is_refused() -> None:
    doc = base("T2", eligible={"sku_families": ["arm-g1"], "sizes": ["xlarge"]})
    compiled, findings = compile_doc(doc)
    f = only(findings, "FEAS004")
    assert compiled is None and f.value == 3 and "arm-g1" in f.fix


def test_pools_priced_at_85_percent_of_guaranteed_are_not_counted_as_discount_pools() -> None:
    def pool(i: int, rate: str) -> Pool:
        return Pool(pool_id=f"p{i}", region="r1", hall=f"h{i % 3}", aggregate="a", sku_family="f", size="s",
                    vcpu=8, memory_gib=32, purchase_model=PurchaseModel.RECLAIMABLE, rate_eur_h=Decimal(rate),
                    guaranteed_rate_eur_h=Decimal("1.00"))
    cheap = [pool(i, "0.50") for i in range(7)]
    dear = [pool(7, "0.85")]
    _, findings = compile_doc(base("T5"), cat=PoolCatalogue(pools=(*cheap, *dear)))
    assert only(findings, "FEAS004").value == 7
    compiled, _ = compile_doc(base("T5"), cat=PoolCatalogue(pools=(*cheap, pool(7, "0.84"))))
    assert compiled is not None


# FEAS005 -------------------------------------------------------------------------------------------

def test_restartable_work_is_admitted() -> None:
    compiled, _ = compile_doc(base("bespoke", nearest_tier="T2", restart="idempotent"))
    assert compiled is not None


def test_not_restartable_work_is_refused_even_in_a_bespoke_contract() -> None:
    compiled, findings = compile_doc(base("bespoke", nearest_tier="T2", restart="not-restartable"))
    f = only(findings, "FEAS005")
    assert compiled is None and f.field == "restart" and "guaranteed capacity" in f.fix


# FEAS006 -------------------------------------------------------------------------------------------

def test_a_declared_interval_within_the_loss_budget_is_not_flagged() -> None:
    compiled, findings = compile_doc(base("T2", checkpoint={"interval_min": 45}))
    assert compiled is not None and "FEAS006" not in codes(findings)


def test_a_declared_interval_above_the_derived_interval_is_flagged_as_a_warning() -> None:
    compiled, findings = compile_doc(base("T2", checkpoint={"interval_min": 120}))
    f = only(findings, "FEAS006")
    assert compiled is not None and f.severity == "warning" and "60" in f.fix


def test_the_derived_interval_drops_below_the_cap_when_no_notice_losses_are_frequent() -> None:
    settings = CompilerSettings(unprotected_share_pct=Decimal("100"), reclaim_rate_pct_h=Decimal("10"))
    compiled, _ = compile_doc(base("T2", checkpoint={"final_size_gib": 2}), settings=settings)
    assert compiled is not None
    # C = 41 s, MTBF = 10 h → √(2 × 41/3600 × 10) h ≈ 28.6 min
    assert compiled.derived_interval_min == 28


# FEAS007 -------------------------------------------------------------------------------------------

def test_a_floor_backed_by_committed_capacity_in_three_halls_compiles() -> None:
    compiled, _ = compile_doc(base("T1"))
    assert compiled is not None and compiled.committed_halls == 3


def test_a_floor_without_committed_capacity_in_three_halls_is_refused() -> None:
    cat = catalogue()
    trimmed = PoolCatalogue(pools=tuple(p for p in cat.pools if not (
        p.purchase_model is PurchaseModel.COMMITTED and p.hall == "h3")))
    compiled, findings = compile_doc(base("T1"), cat=trimmed)
    f = only(findings, "FEAS007")
    assert compiled is None and f.field == "floor_pct" and "h1, h2" in f.rule


@pytest.mark.parametrize("tier", ["T3", "T5"])
def test_tiers_without_a_floor_need_no_committed_capacity(tier: str) -> None:
    empty = PoolCatalogue(pools=tuple(p for p in catalogue().pools if p.purchase_model is PurchaseModel.RECLAIMABLE))
    compiled, findings = compile_doc(base(tier), cat=empty)
    assert compiled is not None, [f.render() for f in findings]
