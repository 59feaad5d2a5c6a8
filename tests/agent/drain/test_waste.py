"""The work lost on one drain (agent/drain/waste.py, ADR-20): each rule, per unit, then per instance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.drain.waste import FINAL_MODES, MODE_NONE, REQUEUE_FRAMEWORK, drain_waste, unit_lost_s
from agent.model import STARTED_AT, Contract, Unit, format_time
from contracts.cost_attributes import ATTR_WASTED_NO_START, ATTR_WASTED_S, ATTR_WASTED_UNITS
from contracts.schema import CheckpointMode, Framework

NOTICE = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def contract(mode: str, framework: str | None = None, interval: int | None = None,
             unit_min: int | None = None) -> Contract:
    return Contract(workload="w", version="1", tier="", scheduler="slurm", drain_budget_s=30, drain_signal="SIGTERM",
                    advisory_drain=False, checkpoint_mode=mode, framework=framework,
                    checkpoint_interval_min=interval, restart="idempotent", requeue=True,
                    max_unit_length_min=unit_min)


def unit(name: str, ran_s: float | None) -> Unit:
    attrs = {} if ran_s is None else {STARTED_AT: format_time(NOTICE - timedelta(seconds=ran_s))}
    return Unit(name, "w@1", attributes=attrs)


FINAL = "final-on-notice+periodic"
RULES = [  # (contract, elapsed s, final written, lost s)
    pytest.param(contract(FINAL, interval=30), 5000, True, 0,
                 id="a final checkpoint on notice within budget loses nothing"),
    pytest.param(contract("framework", "pytorch", interval=20), 5000, True, 0,
                 id="framework checkpointing within budget loses nothing"),
    pytest.param(contract(FINAL, interval=30), 5000, False, 5000 % 1800,
                 id="an overrun of a final-on-notice workload loses the work since the last periodic checkpoint"),
    pytest.param(contract("framework", "spark", interval=15), 2000, False, 2000 % 900,
                 id="an overrun of framework checkpointing loses the work since the last periodic checkpoint"),
    pytest.param(contract("periodic", interval=10), 1500, True, 1500 % 600,
                 id="periodic checkpoints without a final write lose the work since the last one even when drained"),
    pytest.param(contract(FINAL, interval=30), 3600, False, 0,
                 id="elapsed exactly a multiple of the interval loses nothing"),
    pytest.param(contract("periodic", interval=None, unit_min=20), 5000, True, 1200,
                 id="periodic without a known interval loses everything since the start within the unit length"),
    pytest.param(contract("framework", "slurm-requeue", unit_min=45), 1000, True, 1000,
                 id="a slurm requeue loses the whole run so far even when drained"),
    pytest.param(contract("framework", "slurm-requeue", unit_min=45), 4000, True, 2700,
                 id="a slurm requeue loses at most the max unit length"),
    pytest.param(contract("framework", "slurm-requeue"), 4000, True, 4000,
                 id="a slurm requeue without a unit length loses the whole run"),
    pytest.param(contract("none", unit_min=30), 700, True, 700,
                 id="no checkpoint with a max unit length is requeued and loses the run so far"),
    pytest.param(contract("none", unit_min=30), 7000, False, 1800,
                 id="no checkpoint with a max unit length loses at most the unit length"),
    pytest.param(contract("none"), 7000, False, 0,
                 id="a stateless workload with no checkpoint and no unit length loses nothing"),
    pytest.param(contract(FINAL, interval=30), -50, False, 0,
                 id="a start after the notice clock skew counts as nothing run yet"),
]


@pytest.mark.parametrize(("c", "elapsed", "final", "lost"), RULES)
def test_each_rule_gives_the_seconds_one_unit_loses(c: Contract, elapsed: float, final: bool, lost: float) -> None:
    assert unit_lost_s(c, elapsed, final) == pytest.approx(lost)


def test_the_instances_loss_is_the_units_losses_summed_and_divided_by_the_units_on_the_node() -> None:
    c = contract("framework", "slurm-requeue", unit_min=60)
    waste = drain_waste(c, [unit("j1", 600), unit("j2", 1200)], node_units=2, notice_at=NOTICE, remaining=0)
    assert (waste.wasted_s, waste.counted, waste.no_start) == (900, 2, 0)
    shared = drain_waste(c, [unit("j1", 600), unit("j2", 1200)], node_units=4, notice_at=NOTICE, remaining=0)
    assert shared.wasted_s == 450  # two more units (another workload) share the instance


def test_a_unit_without_a_start_time_contributes_nothing_and_is_counted_as_such() -> None:
    c = contract("none", unit_min=60)
    bad = Unit("j3", "w@1", attributes={STARTED_AT: "2026-11-29T11:00:00"})  # no timezone: not a usable time
    waste = drain_waste(c, [unit("j1", 900), unit("j2", None), bad], node_units=3, notice_at=NOTICE, remaining=0)
    assert (waste.wasted_s, waste.counted, waste.no_start) == (300, 1, 2)


def test_zero_units_lose_nothing() -> None:
    waste = drain_waste(contract("none", unit_min=60), [], node_units=0, notice_at=NOTICE, remaining=0)
    assert (waste.wasted_s, waste.counted, waste.no_start) == (0, 0, 0)


def test_an_overrun_or_an_unverified_drain_counts_every_unit_without_a_final_write() -> None:
    c = contract(FINAL, interval=30)
    units = [unit("j1", 2000), unit("j2", 1900)]
    assert drain_waste(c, units, 2, NOTICE, remaining=0).wasted_s == 0
    assert drain_waste(c, units, 2, NOTICE, remaining=1).wasted_s == 150  # (200 + 100) / 2
    assert drain_waste(c, units, 2, NOTICE, remaining=None).wasted_s == 150


def test_the_attributes_use_the_ledgers_keys_with_integer_values() -> None:
    waste = drain_waste(contract("none", unit_min=60), [unit("j1", 100), unit("j2", None)], 2, NOTICE, 0)
    assert waste.attributes() == {ATTR_WASTED_S: 50, ATTR_WASTED_UNITS: 1, ATTR_WASTED_NO_START: 1}
    assert all(type(v) is int for v in waste.attributes().values())


def test_the_agents_mode_names_are_the_contract_schemas() -> None:
    assert CheckpointMode.NONE.value == MODE_NONE and Framework.SLURM_REQUEUE.value == REQUEUE_FRAMEWORK
    assert set(FINAL_MODES) == {CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC.value, CheckpointMode.FRAMEWORK.value}
