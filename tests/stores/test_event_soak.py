"""The fault soak of issue 15, small: publishers → JetStream → ``sco ingest`` → the ClickHouse front end with
the ingest, nats-server and the front end each SIGKILLed once at a seeded point and restarted, poison events
mixed in; every valid event exactly once in ClickHouse, every poison dead-lettered with its reason.
The full size is ``bench/event_soak.py`` (1,000,000 events); the engine is ``testkit/eventsoak.py``
and ``testkit/soakrun.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.eventsoak import POISON_KINDS, TARGETS, SoakResult, longest_stall, plan_soak, ranges
from testkit.soakrun import run_soak

EVENTS = 10_000


def test_the_soak_plan_is_a_function_of_the_seed_with_every_poison_kind_and_each_target_killed() -> None:
    plan = plan_soak(EVENTS, 3, seed=7)
    assert plan == plan_soak(EVENTS, 3, seed=7) and plan != plan_soak(EVENTS, 3, seed=8)
    assert {kind for _, kind in plan.poisons} == set(POISON_KINDS)
    assert {kill.target for kill in plan.kills} == set(TARGETS)
    assert all(EVENTS // 20 <= kill.at < EVENTS * 85 // 100 and 0 <= kill.down_s <= 1.5 for kill in plan.kills)
    assert [kill.at for kill in plan.kills] == sorted({kill.at for kill in plan.kills})


def test_the_reconciliation_names_lost_events_as_ranges_and_a_stall_only_while_the_servers_are_up() -> None:
    assert ranges([3, 4, 5, 9, 11, 12]) == [(3, 5), (9, 9), (11, 12)]
    result = SoakResult(valid=10, elapsed_s=1.0, publish_s=0.5, poisons_streamed=0, poisons_refused=0,
                        final_count=8, distinct=8, missing=[(3, 4)], drained=True)
    assert (result.lost, result.duplicated, result.ok) == (2, 0, False)
    samples = [(0.0, 0, 10), (1.0, 5, 10), (2.0, 5, 10), (3.0, 5, -1), (9.0, 5, -1), (10.0, 5, 10),
               (14.0, 5, 10), (15.0, 10, 10), (30.0, 10, 10)]
    assert longest_stall(samples) == 4.0  # 1→2 s, then 10→14 s after the fault; the fault's 6 s and the
    # quiet end with everything stored are not stalls


@pytest.mark.services
@pytest.mark.timeout(600)
def test_ten_thousand_events_survive_a_sigkill_of_the_ingest_nats_and_the_front_end_none_lost_or_duplicated(
        tmp_path: Path) -> None:
    plan = plan_soak(EVENTS, 3, seed=15, poison_every=2000)

    result = run_soak(plan, tmp_path / "soak", ack_wait_s=3.0, drain_timeout_s=300)

    print("\n".join(result.lines()))
    assert [kill.target for kill in result.kills] == [kill.target for kill in plan.kills]
    assert result.drained, "the consumer still had events pending or unacknowledged"
    assert (result.lost, result.missing, result.duplicated, result.foreign) == (0, [], 0, 0)
    assert result.final_count == result.distinct == EVENTS
    assert result.dead_letter_problems == []
    streamed = sum(1 for _, kind in plan.poisons if kind != "oversize")
    assert (result.poisons_streamed, result.dead_letter_ok) == (streamed, streamed)
    assert result.poisons_refused == sum(1 for _, kind in plan.poisons if kind == "oversize") >= 1
    assert all(kill.recovered_s is not None for kill in result.kills)
