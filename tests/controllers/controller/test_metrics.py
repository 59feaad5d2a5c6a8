"""The controller's metrics (controllers.controller.metrics), pass by pass without a process: shortfall and how
long it lasted, the actions by kind, the breaker, the lease holder, the contract's declared rate and owner, and
the token budget's counters — parsed from the exposition a scrape would get."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from controllers.controller.decision import Decision, Desired, Memory, OpenBreaker, Publish, WritePlans
from controllers.controller.fallback_pass import interruption_rate_pct_h
from controllers.controller.metrics import PassMetrics, PassView
from controllers.controller.model import Note
from controllers.controller.settings import ControllerSettings, PassReport
from controllers.planning.model import Strategy, WorkloadPlan
from controllers.providers.budget import TokenBucket
from stores.telemetry import Registry
from testkit.builders import PARTITION, T0, contract, contracts
from tests.support.exposition import parse

SETTINGS = ControllerSettings("r1", PARTITION, holder="ctl-a")


def _plan(workload: str, short: int) -> WorkloadPlan:
    return WorkloadPlan(workload, "d", Strategy.DEPTH_FIRST, (), 10, 0, short, Decimal(0))


def _metrics() -> tuple[PassMetrics, Registry, TokenBucket]:
    registry = Registry({"region": "r1", "partition": PARTITION})
    bucket = TokenBucket(2.0, monotonic=lambda: 0.0)
    desired = Desired(SETTINGS, contracts(contract("train", "T1"), contract("etl", "T3")))
    return PassMetrics(registry, desired, bucket=bucket), registry, bucket


def _decision(memory: Memory, *actions: object) -> Decision:
    return Decision(tuple(actions), memory, False, 1, 0)  # type: ignore[arg-type]


def test_a_shortfall_is_exported_with_its_units_tier_and_how_long_it_has_lasted() -> None:
    metrics, registry, _ = _metrics()
    memory = Memory.fresh(SETTINGS)
    memory.short_since["train"] = T0
    plans = WritePlans({"train": _plan("train", 3), "etl": _plan("etl", 0)}, 1, ())
    metrics.record(PassView(PassReport(True), 0.05, T0 + timedelta(minutes=16), _decision(memory, plans)))
    doc = parse(registry.render())
    assert doc.value("sco_controller_shortfall_units", workload="train", tier="T1") == 3
    assert doc.value("sco_controller_shortfall_seconds", workload="train", tier="T1") == 960
    assert doc.value("sco_controller_shortfall_seconds", workload="etl", tier="T3") == 0


def test_actions_events_breaker_and_lease_holder_of_a_pass() -> None:
    metrics, registry, bucket = _metrics()
    memory = Memory.fresh(SETTINGS)
    memory.safety.tripped = True
    decision = _decision(memory, OpenBreaker("2 % in 10 min"), Publish(Note("breaker-tripped", "x")))
    bucket("launch")
    metrics.record(PassView(PassReport(True, events=("breaker-tripped",)), 0.2, T0, decision))
    assert parse(registry.render()).value("sco_controller_breaker_open") == 1
    metrics.record(PassView(PassReport(False), 0.01, T0))
    doc = parse(registry.render())
    assert doc.value("sco_controller_actions_total", kind="open_breaker") == 1
    assert doc.value("sco_controller_events_total", kind="breaker-tripped") == 1
    assert doc.value("sco_controller_passes_total", role="leader") == 1
    assert doc.value("sco_controller_passes_total", role="follower") == 1
    assert doc.value("sco_controller_leader", holder="ctl-a") == 0  # the last pass did not hold the lease
    assert doc.series("sco_controller_breaker_open") == []  # a standby exports no partition state of its own
    assert doc.value("sco_controller_token_budget_spent_total") == 1
    assert doc.value("sco_controller_token_budget_rate_per_second") == 2
    assert doc.value("sco_controller_pass_duration_seconds_count") == 2


def test_each_contract_in_force_exports_its_owner_declared_rate_and_cap() -> None:
    _, registry, _ = _metrics()
    doc = parse(registry.render())
    info = {s["workload"]: s for s in doc.series("sco_contract_info")}
    assert info["train"]["owner"] == "owner@example.org" and info["train"]["tier"] == "T1"
    assert doc.value("sco_contract_max_interruption_rate_pct_per_hour", workload="etl") > 0
    assert doc.value("sco_controller_fallback_cap_eur", workload="train") == 100


def test_the_measured_rate_counts_notices_per_live_instance_per_hour() -> None:
    assert interruption_rate_pct_h(1, 4, timedelta(hours=1)) == 25.0
    assert interruption_rate_pct_h(1, 0, timedelta(hours=1)) == 100.0  # no live instance counts as one
    assert interruption_rate_pct_h(2, 10, timedelta(minutes=30)) == 40.0
