"""ADR-32's agent rollout: a candidate image for a share of new launches, chosen from the launch's stable id
(a retry boots the same image), and the launches' events say which agent version and bundle generation."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from controllers.controller import AgentImage, AgentRollout, choose_agent, parse_agent_image
from controllers.controller.userdata import MemoryAgentCredentials
from controllers.errors import ConfigError
from testkit.builders import contract, contracts
from tests.controllers.controller.test_controller import World, world  # noqa: F401 (the fixture)

CURRENT, CANDIDATE = AgentImage("0.1.0", "sco-agent-0.1.0"), AgentImage("0.2.0", "sco-agent-0.2.0")


@pytest.mark.parametrize(("share", "low", "high"), [(Decimal("5"), 450, 550), (Decimal("50"), 4800, 5200),
                                                    (Decimal("0"), 0, 0), (Decimal("100"), 10_000, 10_000)])
def test_the_candidate_gets_the_configured_share_of_launches(share: Decimal, low: int, high: int) -> None:
    rollout = AgentRollout(CURRENT, CANDIDATE, share)
    chosen = [choose_agent(rollout, f"launch-{i}") for i in range(10_000)]
    assert low <= chosen.count(CANDIDATE) <= high
    assert set(chosen) <= {CURRENT, CANDIDATE}


def test_a_retried_launch_boots_the_same_image_and_no_candidate_means_the_current_one() -> None:
    rollout = AgentRollout(CURRENT, CANDIDATE, Decimal("30"))
    first = {f"lk-{i}": choose_agent(rollout, f"lk-{i}") for i in range(500)}
    assert {k: choose_agent(AgentRollout(CURRENT, CANDIDATE, Decimal("30")), k) for k in first} == first
    assert {choose_agent(AgentRollout(CURRENT), k) for k in first} == {CURRENT}
    # raising the share only moves launches to the candidate, never back
    wider = AgentRollout(CURRENT, CANDIDATE, Decimal("60"))
    assert all(choose_agent(wider, k) == CANDIDATE for k, v in first.items() if v == CANDIDATE)


def test_a_bad_share_or_image_option_is_refused_naming_the_value_and_the_fix() -> None:
    with pytest.raises(ConfigError, match="150 is not a percentage"):
        AgentRollout(CURRENT, CANDIDATE, Decimal("150"))
    assert parse_agent_image("0.2.0=sco-agent-0.2.0", "--agent-candidate") == CANDIDATE
    with pytest.raises(ConfigError, match=r"--agent-candidate 'sco-agent' is not VERSION=IMAGE; give e\.g\."):
        parse_agent_image("sco-agent", "--agent-candidate")


def test_the_controller_launches_each_request_with_the_chosen_image_and_says_so_in_its_placed_event(
        world: World) -> None:  # noqa: F811
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 30)
    rollout = AgentRollout(CURRENT, CANDIDATE, Decimal("50"))
    bundle = (json.dumps({"kind": "AgentBundle", "generation": 7}).encode(), b"c2ln\n")
    world.run(world.controller(contracts(etl), agent_bundle=bundle, agent=rollout, nats_urls=("nats://relay.h1:4222",),
                               agent_credentials=MemoryAgentCredentials()), 6)
    assert world.log.requests
    by_key: dict[str, str] = {}
    for request in world.log.requests:
        key = request.metadata["sco_launch_key"]
        expected = choose_agent(rollout, key)
        assert request.image == expected.image and request.metadata["sco_agent_version"] == expected.version
        by_key[key] = expected.version
    placed = world.events("placed")
    assert placed and {e["attributes"]["launch_key"]: e["attributes"]["agent_version"] for e in placed} == by_key
    assert {e["attributes"]["bundle_generation"] for e in placed} == {7}
