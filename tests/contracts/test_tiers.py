"""The tiers' override rules (ADR-02): what a contract naming a tier may and may not change."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contracts.schema import FallbackPolicy, PlacementStrategy, TierName
from contracts.tiers import TIERS
from testkit.builders import base
from tests.contracts.helpers import codes, compile_doc


def test_there_are_exactly_five_tiers_with_the_floors_of_adr_02() -> None:
    floors = {name: tier.defaults["floor_pct"] for name, tier in TIERS.items()}
    assert floors == {TierName.T1: 30, TierName.T2: 10, TierName.T3: 0, TierName.T4: 30, TierName.T5: 0}


def test_t3_may_shorten_its_unit_length() -> None:
    compiled, findings = compile_doc(base("T3", max_unit_length_min=30))
    assert compiled is not None and compiled.contract.max_unit_length_min == 30, findings


def test_t3_may_not_lengthen_its_unit() -> None:
    compiled, findings = compile_doc(base("T3", max_unit_length_min=120))
    assert compiled is None and codes(findings) == ["TIER002"]
    assert findings[0].field == "max_unit_length_min" and "only be lowered" in findings[0].rule


def test_t3_may_not_add_a_floor() -> None:
    compiled, findings = compile_doc(base("T3", floor_pct=10))
    assert compiled is None and "TIER002" in codes(findings)
    assert "tier: bespoke" in findings[0].fix


def test_t5_has_no_floor_and_no_fallback() -> None:
    compiled, _ = compile_doc(base("T5"))
    assert compiled is not None
    c = compiled.contract
    assert c.floor_pct == 0 and c.fallback_policy is FallbackPolicy.NONE and c.spend_cap_24h_eur == 0
    assert c.placement_strategy is PlacementStrategy.PRICE_FIRST
    for field, value in (("floor_pct", 5), ("fallback", {"spend_cap_24h_eur": 50})):
        refused, findings = compile_doc(base("T5", **{field: value}))
        assert refused is None and "TIER002" in codes(findings), field


def test_t1_may_raise_its_floor_but_not_lower_it() -> None:
    raised, _ = compile_doc(base("T1", floor_pct=50))
    assert raised is not None and raised.contract.floor_pct == 50
    lowered, findings = compile_doc(base("T1", floor_pct=20))
    assert lowered is None and "only be raised" in findings[0].rule


def test_t1_requires_a_deadline_a_spend_cap_and_an_approver() -> None:
    doc = base("T1")
    del doc["deadline"], doc["fallback"]
    compiled, findings = compile_doc(doc)
    assert compiled is None
    assert sorted(f.field for f in findings) == ["deadline", "fallback.approver", "fallback.spend_cap_24h_eur"]
    assert set(codes(findings)) == {"TIER004"}


def test_t4_may_not_checkpoint_and_must_drain_within_60_seconds() -> None:
    compiled, findings = compile_doc(base("T4", drain_budget_s=90))
    assert compiled is None and findings[0].field == "drain_budget_s"
    compiled, findings = compile_doc(base("T4", checkpoint={"mode": "periodic"}))
    assert compiled is None and findings[0].field == "checkpoint.mode"


def test_t2_checkpoint_mode_must_be_one_that_checkpoints() -> None:
    compiled, findings = compile_doc(base("T2", checkpoint={"mode": "none"}))
    assert compiled is None and "must be one of" in findings[0].rule


def test_setting_a_field_to_its_tier_default_is_always_allowed() -> None:
    compiled, findings = compile_doc(base("T3", floor_pct=0, drain_budget_s=30))
    assert compiled is not None, findings


def test_a_bespoke_contract_may_override_anything_and_is_marked_for_review() -> None:
    doc = base("bespoke", nearest_tier="T3", floor_pct=10, review="PLAT-1")
    doc["fallback"] = {"spend_cap_24h_eur": 10, "approver": "x@example.org", "policy": "on-breach-within-cap"}
    compiled, findings = compile_doc(doc)
    assert compiled is not None, [f.render() for f in findings]
    assert compiled.contract.needs_review and compiled.contract.base_tier is TierName.T3
    assert compiled.contract.floor_pct == 10 and compiled.contract.spend_cap_24h_eur == Decimal("10")
    assert codes(findings) == ["TIER003"] and "PLAT-1" in findings[0].fix


@pytest.mark.parametrize("tier", ["T1", "T2", "T3", "T4", "T5"])
def test_every_tier_compiles_a_minimal_contract(tier: str) -> None:
    compiled, findings = compile_doc(base(tier))
    assert compiled is not None, [f.render() for f in findings]
    assert compiled.contract.floor_pct == TIERS[TierName(tier)].defaults["floor_pct"]
