"""Issue 18, notices on a NATS cluster of three: real agents spread over the members, the busiest member
SIGKILLed while the burst is being published; every node takes its notice in and acts, the agents of the killed
member reconnect to the others; p99 publish → intake printed. Size-reduced; the full size against a same-run
single-server baseline is ``bench/nats_cluster.py``. The harness is ``testkit/noticekill.py``."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from testkit.nats import NatsCluster
from testkit.noticekill import notice_users, run_notices

NODES = 90


@pytest.mark.services
@pytest.mark.timeout(180)
@pytest.mark.parametrize("relay", ["other", "relay"], ids=["relay-on-another-member", "relay-on-the-killed-member"])
def test_every_notice_reaches_its_agent_when_the_member_holding_the_most_agents_is_killed_mid_burst(
        tmp_path: Path, relay: str) -> None:
    instances = [f"i-{n:04d}" for n in range(NODES)]
    password = secrets.token_urlsafe(18)
    cluster = NatsCluster(3, tmp_path / "nats", users=notice_users(instances, password)).start()
    try:
        run = run_notices(cluster, instances, tmp_path / "agents", password, kill=relay, deadline_s=60)
    finally:
        cluster.close()

    print("\n" + "\n".join(run.lines(f"NATS cluster of 3, busiest member SIGKILLed after a quarter of the burst, "
                                     f"relay on {'it' if relay == 'relay' else 'another member'}")))
    assert sum(run.spread.values()) == NODES and len(run.spread) >= 2, "the agents did not spread over the members"
    assert run.killed is not None and run.on_killed >= 1 and run.relay_on_killed == (relay == "relay")
    assert len(run.intake) == NODES, "a node never took its notice in"
    assert len(run.acted) == NODES, "a node never took its first drain action"
    assert run.reconnected == run.on_killed, "an agent of the killed member did not reconnect to another"
