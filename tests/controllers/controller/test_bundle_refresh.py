"""The controller refreshes its own bundle between passes (issue 16): the real controller (PostgreSQL, the
simulated region in process, a stepped clock) polls the real distributor over HTTP for bundles compiled and
signed by ``publish``. A newer generation is used by the next pass; a forged bundle, a governed change without
the governance signature and an older generation are each refused with their code — logged, counted, a
``bundle-refused`` event, after a second read of the same files — and the held bundle stays in force (its
contracts, and the chain in PostgreSQL)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.signing import KeyPair, generate_keypair
from controllers.controller.bundle_guard import BundleGuard
from controllers.controller.bundle_refresh import BundleRefresh, contracts_of
from controllers.controller.loop import Controller
from controllers.controller.metrics import PassMetrics
from distributor import ControllerBundleFeed, SignedBundle
from stores.telemetry import Registry
from testkit.builders import PARTITION
from tests.controllers.controller.test_controller import World, world  # noqa: F401 (a fixture)
from tests.distributor.test_controller_feed import Publisher, etl, forged, serve, train
from tests.distributor.test_server import Running

GOVERNED = {"fallback": {"spend_cap_24h_eur": 250, "approver": "budget@example.org"}}


@pytest.fixture
def dist(tmp_path: Path) -> Iterator[tuple[Running, Path]]:
    root = tmp_path / "dist"
    root.mkdir()
    running = Running(root, [datetime.now(UTC)])
    yield running, root
    running.close()


def _workloads(w: World) -> set[str]:
    return {i.owner.workload for i in w.mine()}


def _setup(w: World, pub: Publisher, running: Running, g1: SignedBundle) -> tuple[Controller, BundleRefresh]:
    held = pub.verified(g1)
    assert BundleGuard(w.conn, PARTITION).admit(held.payload, "--bundle") is None  # what `run` does at start
    ctl = w.controller(contracts_of(held.payload))
    ctl.metrics = PassMetrics(Registry(), ctl.desired)
    feed = ControllerBundleFeed(running.url, PARTITION, pub.signing.public_pem, pub.governance.public_pem,
                                "Bearer ctl-token", held)
    return ctl, BundleRefresh(ctl, feed, BundleGuard(w.conn, PARTITION), w.clock)


def test_a_newer_generation_from_the_distributor_is_what_the_next_pass_plans_with(
        world: World, dist: tuple[Running, Path], tmp_path: Path) -> None:  # noqa: F811
    running, root = dist
    pub = Publisher(tmp_path / "compiled", *_keys())
    g1 = pub.compile(etl())
    serve(root, g1)
    world.source.demand("etl@1", 12)
    world.source.demand("train@1", 12, prefix="t")
    ctl, refresh = _setup(world, pub, running, g1)
    world.run(ctl, 4)
    assert refresh.between_passes().outcome == "unchanged"
    assert _workloads(world) == {"etl"}, "train is not in generation 1: its work is refused"
    serve(root, pub.compile(etl(), train()))
    done = refresh.between_passes()
    assert (done.outcome, done.generation) == ("taken", 2)
    assert _workloads(world) == {"etl"}, "the swap waits for the next pass"
    world.run(ctl, 4)
    assert _workloads(world) == {"etl", "train"}
    assert _chain(world) == 2, "the chain in PostgreSQL follows the taken bundle"
    row = world.conn.execute("SELECT contract_version FROM contracts_in_force WHERE workload = 'train'").fetchone()
    assert row is not None and row[0] == "train@1", "the new contracts are the contracts in force"
    assert ctl.metrics is not None and ctl.metrics.registry.value("sco_controller_bundle_generation") == 2


def _keys() -> tuple[KeyPair, KeyPair]:
    return generate_keypair(), generate_keypair()


def _chain(w: World) -> int:
    row = w.conn.execute("SELECT generation FROM controller_bundles WHERE partition = %s", (PARTITION,)).fetchone()
    return int(row[0])


@pytest.mark.parametrize(("case", "code"), [
    ("forged", "BND001"),
    ("governed-without-governance-signature", "BND004"),
    ("older-generation", "BND002"),
])
def test_a_refused_bundle_is_logged_counted_and_reported_and_the_held_one_stays_in_force(
        world: World, dist: tuple[Running, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture,  # noqa: F811
        case: str, code: str) -> None:
    running, root = dist
    pub = Publisher(tmp_path / "compiled", *_keys())
    g1 = pub.compile(etl())
    g2 = pub.compile(etl(), train())
    world.source.demand("etl@1", 12)
    world.source.demand("train@1", 12, prefix="t")
    ctl, refresh = _setup(world, pub, running, g1)
    serve(root, g2)
    assert refresh.between_passes().outcome == "taken"
    world.run(ctl, 4)
    before = set(ctl.desired.contracts)
    if case == "forged":
        offered = forged(pub.compile(etl()))                  # generation 3 dropping train, signed by a stranger
    elif case == "older-generation":
        offered = g1
    else:
        g3 = pub.compile(etl(**GOVERNED))                      # a raised spend cap, and train dropped
        offered = SignedBundle(g3.raw, g3.signature, None)
    serve(root, offered)
    first = refresh.between_passes()                           # files failing the rule are read twice first
    assert first.outcome == "unchanged" and not world.events("bundle-refused"), "not refused on one read"
    with caplog.at_level(logging.WARNING, logger="controllers.controller.bundle_refresh"):
        done = refresh.between_passes()
    assert (done.outcome, done.code, done.generation) == ("refused", code, 2)
    assert any(r.getMessage().startswith(f"{code}: controller bundle") for r in caplog.records)
    assert ctl.metrics is not None and ctl.metrics.registry.value("sco_controller_bundle_refused_total",
                                                                  code=code) == 1
    events = world.events("bundle-refused")
    assert len(events) == 1 and events[0]["attributes"]["code"] == code
    assert events[0]["attributes"]["held_generation"] == 2
    assert refresh.between_passes().outcome == "unchanged", "the same refused files are not reported again"
    world.run(ctl, 3)
    assert set(ctl.desired.contracts) == before and _workloads(world) == {"etl", "train"}
    assert _chain(world) == 2, "the chain in PostgreSQL still holds generation 2"
    assert len(world.events("bundle-refused")) == 1
