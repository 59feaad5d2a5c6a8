"""Issue 18, the event spine on a NATS cluster of three: events published with ``Nats-Msg-Id`` while the member
leading ``SCO_EVENTS`` (found with ``$JS.API.STREAM.INFO``) is SIGKILLed mid-way and restarted; every event
exactly once in ClickHouse, every poison dead-lettered, the restarted member current again. Size-reduced here;
the full size (100,000 events) against a same-run single-server baseline is ``bench/nats_cluster.py``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from testkit.eventsoak import KillPlan, plan_soak
from testkit.soakrun import run_soak

EVENTS = 20_000
DOWN_S = 5.0  # the killed leader stays down this long: the rest of the run is on the other two and a new leader


@pytest.mark.services
@pytest.mark.timeout(300)
def test_events_survive_a_sigkill_of_the_stream_leader_of_a_three_server_cluster_none_lost_or_duplicated(
        tmp_path: Path) -> None:
    # killed once 5 % are stored; the publisher waits at half-way until then, so the kill lands mid-publish even
    # when it runs far ahead of the ingest (a clean clone's run published all 20,000 before 5 % were stored)
    kill = KillPlan(EVENTS // 20, "nats", DOWN_S, hold_from=EVENTS // 2)
    plan = replace(plan_soak(EVENTS, 0, seed=18, poison_every=5000), kills=(kill,))

    result = run_soak(plan, tmp_path / "soak", ack_wait_s=3.0, drain_timeout_s=180, nats_cluster=3)

    print("\n".join(result.lines()))
    assert [kill.target for kill in result.kills] == ["nats"] and len(result.leaders_killed) == 1
    assert result.kills[0].at < EVENTS, "the leader was killed after the last publish, not during the ingest"
    assert result.drained, "the consumer still had events pending or unacknowledged"
    assert (result.lost, result.missing, result.duplicated, result.foreign) == (0, [], 0, 0)
    assert result.final_count == result.distinct == EVENTS
    assert result.dead_letter_problems == []
    assert result.replicas_current is True, "the restarted member did not catch up with the stream"
    assert all(kill.recovered_s is not None for kill in result.kills)
