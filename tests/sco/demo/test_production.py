"""The compressed reclaim rate's effect on the demo's figures, computed: wasted work at the production rate by
the contracts' checkpoint rules (ADR-20) and linearly, and the net saving without the fallback that the
compressed rate's breaches start."""

from __future__ import annotations

import pytest

from contracts.agent_record import AgentRecord
from sco.demo.production import (
    BREACH,
    breach_share,
    breach_share_at_rate,
    contract_waste_pct,
    net_at_rate,
    net_without_breach_fallback,
    waste_at_rate,
)


def record(mode: str, *, framework: str | None = None, interval: int | None = None,
           length: int | None = None) -> AgentRecord:
    return AgentRecord(workload="w", version="1", tier="T3", scheduler="slurm", drain_budget_s=60,
                       drain_signal="SIGTERM", advisory_drain=False, checkpoint_mode=mode, framework=framework,
                       checkpoint_interval_min=interval, restart="resume", requeue=length is not None,
                       max_unit_length_min=length)


@pytest.mark.parametrize(("contract", "pct"), [
    pytest.param(record("none", length=60), 2.0, id="a requeued 60-minute unit loses half its length: 4 %/h x 0.5 h"),
    pytest.param(record("framework", framework="slurm-requeue", length=45), 1.5, id="slurm-requeue is a requeue"),
    pytest.param(record("periodic", interval=30), 1.0, id="periodic without a final write loses half an interval"),
    pytest.param(record("final-on-notice+periodic", interval=60), 0.04,
                 id="a final write on notice loses half an interval only without notice (2 %)"),
    pytest.param(record("none"), 0.0, id="a stateless unit loses nothing"),
])
def test_each_contract_s_wasted_work_at_the_production_rate(contract: AgentRecord, pct: float) -> None:
    assert contract_waste_pct(contract, 4.0, 0.02) == pytest.approx(pct)


def test_the_measured_share_is_scaled_linearly_and_by_the_contracts_beside_it() -> None:
    got = waste_at_rate(6.0, 150.0, 4.0, [record("none", length=60), record("none")])
    assert got.linear_pct == pytest.approx(0.16) and got.contracts_pct == pytest.approx(1.0)
    assert got.text() == ("at 4 %/h: 0.16 % scaled linearly (a lower bound), 1.00 % by the contracts' checkpoint "
                          "rules")


def test_net_saving_without_the_fallback_rate_breaches_started_prices_its_hours_as_reclaimable() -> None:
    starts = [{"cause": BREACH, "attributes": {"instances": 3}}, {"cause": "floor", "attributes": {"instances": 1}}]
    share = breach_share(starts)
    assert share == pytest.approx(0.75)
    money = {"counterfactual_eur": 100.0, "net_eur": 40.0, "reclaimable_hours": 10.0, "reclaimable_eur": 5.0,
             "fallback_eur": 20.0, "fallback_hours": 8.0}
    # 75 % of €20 out, 75 % of 8 h back at €0.5/h: 40 + 15 − 3 = 52
    assert net_without_breach_fallback(money, share) == pytest.approx(52.0)
    assert net_without_breach_fallback({}, share) is None and breach_share([]) == 0.0


# a run's ledger terms, small enough to check by hand: 50 worked hours of work valued €100 (€2/h), 5 of them lost
LEDGER = {"counterfactual_eur": 90.0, "wasted_eur": 10.0, "useful_hours": 45.0, "wasted_hours": 5.0,
          "reclaimable_hours": 40.0, "reclaimable_eur": 20.0, "floor_eur": 10.0, "fallback_eur": 8.0,
          "fallback_hours": 4.0, "headroom_eur": 2.0, "storage_eur": 1.0, "orchestrator_eur": 0.0}


def test_the_net_at_the_production_rate_recomputes_the_waste_and_the_spared_fallback_from_the_run_s_terms() -> None:
    at = net_at_rate(LEDGER, wasted_pct=1.0, breach_out=0.5, rate_pct_h=4.0)
    assert at is not None
    # wasted: 1 % of 40 h at €2/h = €0.80, so €99.20 of useful work; half the fallback (4 h, €8) not started, its
    # 2 h at the reclaimable €0.50/h: costs 21 + 10 + 4 + 2 + 1 = €38; net €61.20
    assert at.pct == pytest.approx(100 * 61.2 / 99.2)
    assert at.passed and "below" not in at.text() and at.text().startswith("61.7 % at 4 %/h")


def test_a_net_below_the_target_says_fail_with_the_cost_lines_that_hold_it_there() -> None:
    at = net_at_rate({**LEDGER, "floor_eur": 30.0}, wasted_pct=1.0, breach_out=0.5, rate_pct_h=4.0)
    assert at is not None and not at.passed
    assert at.pct == pytest.approx(100 * 41.2 / 99.2)
    assert at.text().endswith("below 55 % because costs in % of the counterfactual: the guaranteed floor 30.2 %, "
                              "reclaimable spend 21.2 %, guaranteed fallback 4.0 %; wasted work 1.00 % of "
                              "reclaimable hours")


def test_without_the_ledger_s_terms_there_is_no_production_figure() -> None:
    assert net_at_rate({k: v for k, v in LEDGER.items() if k != "floor_eur"}, 1.0, 0.5, 4.0) is None
    assert net_at_rate({**LEDGER, "reclaimable_hours": 0.0}, 1.0, 0.5, 4.0) is None


def test_only_breach_fallback_of_workloads_tolerating_the_production_rate_is_spared() -> None:
    starts = [{"cause": BREACH, "workload": "loose", "attributes": {"instances": 3}},
              {"cause": BREACH, "workload": "tight", "attributes": {"instances": 1}},
              {"cause": "shortfall", "workload": "loose", "attributes": {"instances": 4}}]
    tolerances = {"loose": 8.0, "tight": 2.0}
    assert breach_share_at_rate(starts, tolerances, 4.0) == pytest.approx(3 / 8)
    assert breach_share_at_rate(starts, tolerances, 10.0) == 0.0
    assert breach_share_at_rate([], tolerances, 4.0) == 0.0
