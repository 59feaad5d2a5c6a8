"""The rollout planner on virtual time (ADR-32): start the canary, hold through the soak, promote after it,
roll back on the first failed gate; and the gate windows and comparisons it relies on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from contracts.settings import CompilerSettings
from distributor import (
    GateFigures,
    Hold,
    Promote,
    RollBack,
    RolloutObserved,
    StartCanary,
    gate_failure,
    gate_windows,
    plan_rollout,
)

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
SETTINGS = CompilerSettings(canary_partition="r1/slurm-hpc")
PARTS = {"r1/slurm-hpc": (3, 4), "r1/k8s-batch": (7, 8)}
CALM = GateFigures(drains=40, overruns=1, shortfalls=2, breaches=0, lost=1, wasted_s=400.0)


def _observed(started: datetime | None = T0, candidate: GateFigures | None = CALM,
              baseline: GateFigures | None = CALM, canary: str = "r1/slurm-hpc") -> RolloutObserved:
    return RolloutObserved(release=5, partitions=PARTS, canary=canary if started else None, started_at=started,
                           candidate=candidate, baseline=baseline)


@pytest.mark.parametrize(("observed", "settings", "hours", "expected"), [
    (RolloutObserved(), SETTINGS, 0, []),
    (_observed(started=None), SETTINGS, 0, [StartCanary(release=5, partition="r1/slurm-hpc")]),
    (_observed(canary="r1/k8s-batch"), SETTINGS, 1, [StartCanary(release=5, partition="r1/slurm-hpc")]),
    (_observed(), SETTINGS, 1, "hold"),
    (_observed(), SETTINGS, 23.99, "hold"),
    (_observed(), SETTINGS, 24, [Promote(release=5)]),
    (_observed(), SETTINGS.model_copy(update={"canary_soak_h": Decimal("2")}), 2.5, [Promote(release=5)]),
    (_observed(candidate=CALM.model_copy(update={"refused": 1})), SETTINGS, 0.1, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"refused": 1})), SETTINGS, 30, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"overruns": 2})), SETTINGS, 3, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"shortfalls": 3})), SETTINGS, 3, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"breaches": 1})), SETTINGS, 3, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"lost": 2})), SETTINGS, 3, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"wasted_s": 401.0})), SETTINGS, 3, "rollback"),
    (_observed(candidate=CALM.model_copy(update={"wasted_s": 800.0, "drains": 80})), SETTINGS, 25,
     [Promote(release=5)]),
    (_observed(candidate=CALM.model_copy(update={"overruns": 2, "drains": 80})), SETTINGS, 25, [Promote(release=5)]),
    (_observed(candidate=None), SETTINGS, 30, "hold"),
    (_observed(), CompilerSettings(), 30, "hold"),
    (_observed(), CompilerSettings(canary_partition="r9/none"), 30, "hold"),
], ids=["nothing-staged", "start", "canary-moved", "soaking", "a-minute-short", "soaked", "short-soak",
        "refused-at-once", "refused-late", "more-overruns", "more-shortfalls", "a-breach", "more-lost-work",
        "more-wasted-work", "same-waste-per-drain",
        "same-overrun-rate", "figures-unreadable", "no-canary-set", "canary-not-staged"])
def test_the_planner_starts_holds_promotes_after_the_soak_and_rolls_back_on_a_failed_gate(
        observed: RolloutObserved, settings: CompilerSettings, hours: float, expected: object) -> None:
    actions = plan_rollout(observed, settings, T0 + timedelta(hours=hours))
    if expected == "hold":
        assert len(actions) == 1 and isinstance(actions[0], Hold) and actions[0].release == 5
    elif expected == "rollback":
        assert len(actions) == 1 and isinstance(actions[0], RollBack) and actions[0].reason
    else:
        assert actions == expected


def test_a_hold_says_why_with_a_stable_code_when_the_settings_cannot_run_a_canary() -> None:
    unset = plan_rollout(_observed(), CompilerSettings(), T0)
    missing = plan_rollout(_observed(), CompilerSettings(canary_partition="r9/none"), T0)
    assert isinstance(unset[0], Hold) and unset[0].reason.startswith("CAN001") and "compiler.yaml" in unset[0].reason
    assert isinstance(missing[0], Hold) and missing[0].reason.startswith("CAN002") and "r9/none" in missing[0].reason


def test_the_baseline_window_is_as_long_as_the_canary_has_run_and_at_most_the_soak() -> None:
    soak = timedelta(hours=24)
    (c_from, c_to), (b_from, b_to) = gate_windows(T0, T0 + timedelta(hours=3), soak)
    assert (c_from, c_to, b_from, b_to) == (T0, T0 + timedelta(hours=3), T0 - timedelta(hours=3), T0)
    _, (late_from, _) = gate_windows(T0, T0 + timedelta(hours=40), soak)
    assert late_from == T0 - soak


def test_a_gate_failure_names_the_figure_and_both_values() -> None:
    reason = gate_failure(CALM.model_copy(update={"overruns": 4}), CALM)
    assert reason is not None and "4/40" in reason and "1/40" in reason
    assert gate_failure(CALM, CALM) is None
    assert "2 breaches" in str(gate_failure(CALM.model_copy(update={"breaches": 2}), CALM))
    assert "wasted work 20.0 s per drain" in str(gate_failure(CALM.model_copy(update={"wasted_s": 800.0}), CALM))


def test_the_settings_default_to_a_24_hour_soak_and_a_5_percent_agent_share() -> None:
    settings = CompilerSettings()
    assert settings.canary_soak_h == 24 and settings.agent_canary_share_pct == 5 and settings.canary_partition is None
    with pytest.raises(ValueError, match="canary_partition"):
        CompilerSettings(canary_partition="not a partition")
