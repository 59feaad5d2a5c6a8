"""Revocation by the running controller (ADR-31, issue 16): a failed revocation is tried again on a later pass,
backing off, until it is confirmed; and with the stack's NATS, an ended instance's own NATS user is removed —
its open connection is dropped, its password no longer logs in (``Authorization Violation``) while a sibling's
still does."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

from controllers.controller.revocation import CompositeRevoker, NatsUserRevoker, RecordingRevoker, Revocation
from sco.stack import manager
from testkit.builders import contract, contracts
from tests.controllers.controller.test_controller import World, world  # noqa: F401 (a fixture)

BUNDLE = (b'{"kind":"AgentBundle"}', b"c2lnbmF0dXJl\n")


class Flaky:
    """A credential authority that is away for the first ``failures`` calls."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"keystone unreachable (call {self.calls})")
        return Revocation(True, "revoked")


def _retry_row(w: World, iid: str) -> tuple[int, object]:
    row = w.conn.execute("SELECT revocation_attempts, revocation_next_at FROM instances WHERE instance_id = %s",
                         (iid,)).fetchone()
    return int(row[0]), row[1]


def _revoked(w: World, iid: str) -> list[dict[str, object]]:
    return [e["attributes"] for e in w.events("credentials-revoked") if e["instance"] == iid]


def test_a_failed_revocation_is_retried_on_later_passes_with_backoff_until_it_is_confirmed(
        world: World) -> None:  # noqa: F811
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 12)
    flaky = Flaky(failures=2)
    world.revoker = flaky  # type: ignore[assignment]
    ctl = world.controller(contracts(etl))
    world.run(ctl, 5)
    victim = world.mine()[0].instance_id
    world.region.terminate(victim)                      # gone: reclaimed, or deleted behind our back
    ctl.step()
    assert [a["ok"] for a in _revoked(world, victim)] == [False]
    attempts, due = _retry_row(world, victim)
    assert attempts == 1 and due == world.clock.now() + timedelta(seconds=10)
    world.clock.advance(seconds=5)
    ctl.step()
    assert len(_revoked(world, victim)) == 1, "not before it is due"
    world.clock.advance(seconds=5)
    ctl.step()
    assert [a["ok"] for a in _revoked(world, victim)] == [False, False]
    attempts, due = _retry_row(world, victim)
    assert attempts == 2 and due == world.clock.now() + timedelta(seconds=20), "the wait doubles"
    world.clock.advance(seconds=20)
    ctl.step()
    done = _revoked(world, victim)
    assert [a["ok"] for a in done] == [False, False, True] and done[-1]["reason"] == "revoked"
    assert _retry_row(world, victim)[1] is None, "nothing left to retry"
    world.clock.advance(minutes=30)
    world.run(ctl, 2)
    assert flaky.calls == 3 and len(_revoked(world, victim)) == 3


async def _connect(port: int, user: str, password: str) -> str:
    """``ok`` when the server lets ``user`` in, else the server's error."""
    nc = NATS()
    try:
        await nc.connect(f"nats://127.0.0.1:{port}", user=user, password=password, allow_reconnect=False,
                         connect_timeout=5, max_reconnect_attempts=0)
    except (NatsError, OSError) as exc:
        return str(exc)
    finally:
        await nc.close()
    return "ok"


async def _revoked_while_connected(ctl: Any, port: int, user: str, password: str) -> bool:
    """Hold a connection as ``user`` while the controller's pass revokes it; whether the server closed it."""
    nc = NATS()
    await nc.connect(f"nats://127.0.0.1:{port}", user=user, password=password, allow_reconnect=False)
    try:
        await asyncio.to_thread(ctl.step)
        deadline = asyncio.get_running_loop().time() + 30
        while not nc.is_closed and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        return bool(nc.is_closed)
    finally:
        await nc.close()


@pytest.mark.services
def test_the_controller_removes_an_ended_instance_nats_user_and_leaves_its_siblings(
        world: World, stack_home: Path) -> None:  # noqa: F811
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 6)
    users = manager.StackAgentCredentials(stack_home)
    keystone = RecordingRevoker()
    world.revoker = CompositeRevoker([keystone, NatsUserRevoker(users, "r1")])  # type: ignore[assignment]
    ctl = world.controller(contracts(etl), agent_bundle=BUNDLE, agent_credentials=users)
    world.run(ctl, 4)
    agents = json.loads((stack_home / "credentials.json").read_text())["agents"]
    ids = sorted(i.instance_id for i in world.mine())
    assert len(ids) >= 2 and {f"r1/{i}" for i in ids} <= set(agents)
    victim, sibling = ids[0], ids[1]
    port = int(json.loads((stack_home / "stack.json").read_text())["services"]["nats"]["port"])
    assert asyncio.run(_connect(port, f"agent.r1.{victim}", agents[f"r1/{victim}"])) == "ok"
    world.region.terminate(victim)
    assert asyncio.run(_revoked_while_connected(ctl, port, f"agent.r1.{victim}", agents[f"r1/{victim}"])), \
        "nats-server drops the removed user's open connection at the reload"
    (revoked,) = _revoked(world, victim)
    assert revoked["ok"] is True and revoked["reason"] == "revoked", revoked
    assert f"agent.r1.{victim} removed" in str(revoked["detail"]) and keystone.banned
    refused = asyncio.run(_connect(port, f"agent.r1.{victim}", agents[f"r1/{victim}"]))
    assert "authorization violation" in refused.lower(), refused
    assert asyncio.run(_connect(port, f"agent.r1.{sibling}", agents[f"r1/{sibling}"])) == "ok"
    left = json.loads((stack_home / "credentials.json").read_text())["agents"]
    assert f"r1/{victim}" not in left and f"r1/{sibling}" in left, "the distributor's table forgets it too"
    assert users.forget("r1", victim) is False, "a second removal finds nothing (already gone)"
