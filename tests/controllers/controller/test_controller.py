"""The controller against real PostgreSQL and the simulated region (in process, on a stepped clock): placement
within the caps, replacement, floor restoration and capped fallback after a hall loss, exclusion, the breaker,
the token budget, restart and rebuild from tags."""

from __future__ import annotations

import base64
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest
import yaml

from contracts.schema import Contract
from controllers.controller.breaker import SafetyConfig
from controllers.controller.budget import BudgetedProvider, split_budget
from controllers.controller.exclusion import ExclusionWatcher, Signal
from controllers.controller.fallback import FallbackConfig
from controllers.controller.floor_keeper import FloorConfig
from controllers.controller.loop import Controller, ControllerSettings
from controllers.controller.rebuild import ownership, rebuild
from controllers.controller.revocation import RecordingRevoker
from controllers.controller.store import Store
from controllers.controller.userdata import MemoryAgentCredentials
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from stores import migrate
from testkit.builders import PARTITION, FakeSource, contract, contracts
from tests.controllers.controller.helpers import CallLog, StepClock, max_calls_in_window

QUIET = dict(reclaim_rate_pct_h=0.0, hall_reclaims_per_30d=0.0, bursts_per_aggregate_day=0.0, seed=5)
FAST = SafetyConfig(recovery_share=Decimal(1))


@dataclass
class World:
    conn: Any
    clock: StepClock
    region: SimulatedRegion
    log: CallLog
    source: FakeSource
    revoker: RecordingRevoker
    hooks: list[dict[str, Any]]
    url: str = ""

    def controller(self, cs: dict[str, Contract], safety: SafetyConfig = FAST, holder: str = "c1",
                   budget: bool = True, agent_bundle: tuple[bytes, bytes] | None = None,
                   agent_credentials: Any = None, **kw: Any) -> Controller:
        provider: Any = self.log
        if budget:
            buckets = split_budget(10, [PARTITION, "r1/k8s-a"], monotonic=lambda: self.clock.now().timestamp())
            bucket = buckets[PARTITION]
            provider = BudgetedProvider(self.log, bucket)
        settings = ControllerSettings("r1", PARTITION, holder=holder, safety=safety, **kw)
        return Controller(settings, provider, self.conn, self.source, cs, self.clock, revoker=self.revoker,
                          webhook=self.hooks.append, agent_bundle=agent_bundle, agent_credentials=agent_credentials)

    def run(self, ctl: Controller, passes: int, every_s: float = 1.0) -> None:
        for _ in range(passes):
            ctl.step()
            self.clock.advance(seconds=every_s)

    def mine(self) -> list[Any]:
        return [i for i in self.region.list_instances() if i.status in ("active", "building")]

    def events(self, kind: str) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT payload FROM outbox ORDER BY id").fetchall()
        return [e for e in (json.loads(bytes(r[0])) for r in rows) if e["kind"] == kind]


@pytest.fixture
def world(pg_migrated_url: str) -> Iterator[World]:
    conn = psycopg.connect(pg_migrated_url, autocommit=True)
    clock = StepClock()
    region = SimulatedRegion(RegionConfig(**QUIET), clock)
    yield World(conn, clock, region, CallLog(region, clock), FakeSource(), RecordingRevoker(), [], pg_migrated_url)
    conn.close()


def _plans(w: World) -> dict[str, dict[str, Any]]:
    return {r[0]: json.loads(r[1]) for r in w.conn.execute(
        "SELECT workload, plan::text FROM plans WHERE in_force AND workload <> '_rebuild'")}


def _matches_plan(w: World) -> bool:
    slots = Counter((i.owner.workload, i.pool_id, i.metadata["sco_purpose"]) for i in w.mine())
    wanted = Counter({(wl, a["pool"], a["purpose"]): a["instances"] for wl, p in _plans(w).items()
                      for a in p["allocations"]})
    return slots == wanted


def _spread(w: World, workload: str) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Units per reclaimable pool and per aggregate (from the plan), floor instances per hall (running)."""
    plan = _plans(w)[workload]
    cat = {p.pool_id: p for p in w.region.catalogue().pools}
    pools: dict[str, int] = defaultdict(int)
    groups: dict[str, int] = defaultdict(int)
    for a in plan["allocations"]:
        if a["purpose"] == "reclaimable":
            pools[a["pool"]] += a["units"]
            groups[cat[a["pool"]].aggregate] += a["units"]
    halls: dict[str, int] = defaultdict(int)
    for i in w.mine():
        if i.owner.workload == workload and i.metadata["sco_purpose"] == "floor":
            halls[i.hall or ""] += 1
    return pools, groups, halls


def test_pending_contracted_jobs_become_instances_across_at_least_8_pools_within_the_caps(world: World) -> None:
    etl, train = contract("etl", "T3"), contract("train", "T1", floor_pct=30)
    world.source.demand(etl.ref, 120)
    world.source.demand(train.ref, 100, prefix="t")
    world.source.demand(None, 2, prefix="x")
    world.run(world.controller(contracts(etl, train)), 12)
    assert _matches_plan(world)
    for wl in ("etl", "train"):
        pools, groups, halls = _spread(world, wl)
        total = sum(pools.values())
        assert len(pools) >= 8 and max(pools.values()) <= 0.15 * total and max(groups.values()) <= 0.30 * total
    _, _, halls = _spread(world, "train")
    assert len(halls) >= 3 and max(halls.values()) <= 0.4 * sum(halls.values()) + 1
    assert len(world.events("claim-refused")) == 2 and world.events("placed")
    claims = dict(world.conn.execute("SELECT claim_id, state FROM claims").fetchall())
    assert claims[f"{PARTITION}/etl"] == "placed" and claims[f"{PARTITION}/train"] == "placed"
    assert sorted(s for k, s in claims.items() if k.startswith("slurm:")) == ["refused", "refused"]


def test_a_reclaim_wave_is_replaced_while_the_old_instances_drain(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 60)
    ctl = world.controller(contracts(etl))
    world.run(ctl, 10)
    before = Counter(i.pool_id for i in world.mine())
    victims = tuple(i.instance_id for i in world.mine()[:4])
    world.region.reclaim(victims, drill=False)
    report = ctl.step()
    assert report.launched == 4
    after = Counter(i.pool_id for i in world.mine())
    assert sum(after.values()) == sum(before.values())
    replaced = {x for e in world.events("replaced") for x in e["attributes"]["replaced"].split(",")}
    assert replaced == set(victims)
    assert {i.instance_id for i in world.region.list_instances() if i.status == "notified"} == set(victims)
    world.clock.advance(seconds=121)  # the notice window ends: the provider deletes them
    ctl.step()
    revoked = {e["instance"] for e in world.events("credentials-revoked")}
    assert revoked == set(victims) and {s.rsplit("/", 1)[-1] for s in world.revoker.banned} == set(victims)


class _Pg:
    """``orchestration.store.Postgres`` on the test's database: what the groups asset publishes through."""

    def __init__(self, url: str) -> None:
        self.url = url

    @contextmanager
    def connection(self) -> Iterator[Any]:
        conn = psycopg.connect(self.url)
        try:
            yield conn
        finally:
            conn.close()


def test_a_merged_correlation_group_published_by_the_groups_asset_changes_the_controllers_placement(
        world: World) -> None:
    from orchestration.groups import publish_groups
    from orchestration.phi import Groups

    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 120)
    pools = [p for p in world.region.catalogue().pools if p.purchase_model.value == "reclaimable"]
    favoured = ("h1-agg-a", "h2-agg-a")  # ranked deepest: depth-first fills each up to the 30 % group cap
    with world.conn.transaction():
        for rank, p in enumerate(sorted(pools, key=lambda p: (p.aggregate not in favoured, p.pool_id)), 1):
            world.conn.execute("INSERT INTO rankings_in_force (region, pool, rank, score, generation, ranked_at) "
                               "VALUES ('r1', %s, %s, %s, 1, now())",
                               (p.pool_id, rank, 0.9 if p.aggregate in favoured else 0.1))
    ctl = world.controller(contracts(etl))
    world.run(ctl, 6)
    _, before, _ = _spread(world, "etl")
    total = sum(before.values())
    assert sum(before[a] for a in favoured) > 0.30 * total  # two groups, up to 30 % each
    cat = {p.pool_id: p.aggregate for p in pools}
    outside = sum(1 for i in world.mine() if cat.get(i.pool_id or "") not in favoured)

    # the groups asset learned that the two aggregates are reclaimed together: one group in force
    merged = {p.pool_id: "h1-agg-a+h2-agg-a" if p.aggregate in favoured else p.aggregate for p in pools}
    publish_groups(_Pg(world.url), "r1", world.clock.now(), Groups(merged, {}))
    world.run(ctl, 6)
    _, after, _ = _spread(world, "etl")
    assert sum(after[a] for a in favoured) <= 0.30 * sum(after.values())  # re-planned under the merged group
    # and acted on: replacements launched outside the merged group (the surplus leaves under ADR-11's pace)
    assert sum(1 for i in world.mine() if cat.get(i.pool_id or "") not in favoured) > outside


def test_an_instance_lost_without_notice_is_published_with_its_wasted_work(world: World) -> None:
    lossy = contract("lossy", "T2", checkpoint={"mode": "periodic", "interval_min": 60})
    world.source.demand(lossy.ref, 20)
    ctl = world.controller(contracts(lossy))
    world.run(ctl, 6)
    victim = world.mine()[0]
    launched_at = world.conn.execute("SELECT launched_at FROM instances WHERE instance_id = %s",
                                     (victim.instance_id,)).fetchone()[0]
    world.clock.advance(minutes=95)
    world.region.terminate(victim.instance_id)  # gone from the listing with no notice ever sent
    ctl.step()
    (lost,) = [e for e in world.events("lost") if e["instance"] == victim.instance_id]
    elapsed = (world.clock.now() - launched_at).total_seconds()
    assert lost["cause"] == "reclaimed-no-notice" and lost["workload"] == "lossy"
    assert lost["attributes"]["wasted_s"] == round(elapsed % 3600) and 34 * 60 < elapsed % 3600 < 36 * 60
    state = world.conn.execute("SELECT state FROM instances WHERE instance_id = %s", (victim.instance_id,)).fetchone()
    assert state[0] == "lost"


def test_a_hall_loss_restores_the_floor_from_other_halls_and_falls_back_within_the_cap(world: World) -> None:
    train = contract("train", "T1", floor_pct=50, fallback={"spend_cap_24h_eur": 60, "approver": "cfo@example.org"})
    world.source.demand(train.ref, 150)
    ctl = world.controller(contracts(train), floor=FloorConfig(hall_lost_min=2),
                           fallback=FallbackConfig(reserve_horizon=timedelta(hours=24)))
    world.run(ctl, 10)
    floor_h1 = [i.instance_id for i in world.mine() if i.metadata["sco_purpose"] == "floor" and i.hall == "h1"]
    elsewhere = sum(1 for i in world.mine() if i.metadata["sco_purpose"] == "floor" and i.hall != "h1")
    assert floor_h1
    world.region.hall_reclaim("h1")
    world.region.reclaim(tuple(floor_h1), drill=False)  # power loss: the committed instances there go too
    for i in world.region.list_instances():
        if i.status == "notified":
            ctl.record_notice("train", world.clock.now())
    world.run(ctl, 3, every_s=30)
    _, _, halls = _spread(world, "train")
    assert "h1" not in halls and sum(halls.values()) > elsewhere
    restored = world.events("floor-restored")
    assert restored and restored[0]["attributes"]["within_promise"] is True
    started = world.events("fallback-started")
    assert started, "the interruption-rate breach should start fallback"
    spent = world.conn.execute("SELECT sum(amount_eur) FROM spend_reservations WHERE workload = 'train' AND "
                               "state IN ('held', 'consumed')").fetchone()[0]
    assert Decimal(spent) <= Decimal(60)
    assert world.events("approval-requested") and world.hooks[0]["alerts"][0]["labels"]["approver"] == "cfo@example.org"
    world.clock.advance(minutes=16)
    ctl.step()
    assert world.events("shortfall")
    spent_after = world.conn.execute("SELECT sum(amount_eur) FROM spend_reservations WHERE workload = 'train' AND "
                                     "state IN ('held', 'consumed')").fetchone()[0]
    assert spent_after == spent


def test_an_excluded_pool_receives_no_new_units(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 60)
    ctl = world.controller(contracts(etl))
    world.run(ctl, 10)
    target = Counter(i.pool_id for i in world.mine()).most_common(1)[0][0]
    watcher = ExclusionWatcher()
    ex = None
    for n, minute in enumerate((0, 10, 20)):
        ex = watcher.observe(Signal("notice", target, world.clock.now() + timedelta(minutes=minute), f"e{n}"))
    assert ex is not None
    from contracts.events import Event

    Store(world.conn, "r1", PARTITION).write_exclusion(ex, Event(kind="excluded", time=world.clock.now(), region="r1",
                                                                 pool=target, cause=ex.reason, source="test"))
    world.clock.advance(minutes=21)
    world.log.calls.clear()
    in_pool = [i.instance_id for i in world.mine() if i.pool_id == target]
    world.region.reclaim(tuple(in_pool), drill=False)
    world.run(ctl, 10)
    launched_pools = {c for c in world.log.calls if c[0] == "launch"}
    assert launched_pools, "the lost units must be replaced elsewhere"
    assert all(i.pool_id != target for i in world.mine())
    plan = world.conn.execute("SELECT plan::text FROM plans WHERE workload = 'etl' AND in_force").fetchone()[0]
    assert target not in plan


def test_an_injected_mass_loss_trips_the_breaker_instead_of_mass_termination(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 100)
    ctl = world.controller(contracts(etl))
    world.run(ctl, 10)
    fleet = len(world.mine())
    world.source.items.clear()  # the scheduler suddenly reports no work at all
    world.source.idle = {i.name for i in world.mine()}
    world.log.calls.clear()
    world.run(ctl, 5)
    assert not [c for c in world.log.calls if c[0] == "terminate"] and len(world.mine()) == fleet
    trips = world.events("breaker-tripped")
    assert len(trips) == 1 and trips[0]["attributes"]["wanted"] == fleet
    assert world.conn.execute("SELECT state FROM breakers WHERE name = 'termination'").fetchone()[0] == "open"
    from sco.cli import main

    assert main(["controller", "reset-breaker", "--partition", PARTITION, "--reason", "scheduler fixed",
                 "--postgres", world.url]) == 0
    world.source.demand(etl.ref, 100)  # the scheduler answers again
    ctl.step()
    assert not ctl.safety.tripped


def test_a_few_idle_surplus_instances_are_terminated_and_their_credentials_revoked(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 100)
    ctl = world.controller(contracts(etl), safety=SafetyConfig(recovery_share=Decimal(1), trip_share=Decimal("0.5")))
    world.run(ctl, 10)
    del world.source.items[90:]
    world.source.idle = {i.name for i in world.mine()}
    world.run(ctl, 4)
    gone = world.events("terminated")
    assert gone and not world.events("breaker-tripped")
    assert len(world.revoker.banned) == len(gone) and len(world.events("credentials-revoked")) == len(gone)


def test_the_token_budget_is_never_exceeded(world: World) -> None:
    cs = [contract(f"w{n}", "T3") for n in range(12)]
    for c in cs:
        world.source.demand(c.ref, 60, prefix=c.workload)
    ctl = world.controller(contracts(*cs))
    throttled = 0
    for _ in range(60):
        throttled += ctl.step().throttled
        world.clock.advance(seconds=0.1)
    times = [t for _, t, _ in world.log.calls]
    assert throttled and len(times) > 20
    # 10/s for the region split over 2 partitions: 5/s with a burst of one second's worth, so any window of
    # T seconds holds at most 5 + 5 T mutating calls
    for seconds in (0.5, 1, 2, 5):
        assert max_calls_in_window(times, timedelta(seconds=seconds)) <= 5 + 5 * seconds


def test_a_restarted_controller_does_two_read_only_cycles_and_launches_no_duplicates(world: World) -> None:
    etl, train = contract("etl", "T3"), contract("train", "T1", floor_pct=30)
    world.source.demand(etl.ref, 80)
    world.source.demand(train.ref, 60, prefix="t")
    first = world.controller(contracts(etl, train), safety=SafetyConfig(recovery_share=Decimal("0.3")))
    world.run(first, 3)
    half = len(world.mine())
    assert half > 0
    del first  # the process is gone; the lease expires
    world.clock.advance(seconds=20)
    second = world.controller(contracts(etl, train), holder="c2")
    reports = [second.step() for _ in range(2)]
    assert all(r.read_only and r.launched == 0 for r in reports) and len(world.mine()) == half
    world.run(second, 12)
    assert _matches_plan(world)
    cycles = world.conn.execute("SELECT holder, read_only FROM controller_cycles ORDER BY id").fetchall()
    assert [ro for h, ro in cycles if h == "c2"][:3] == [True, True, False]


def test_dropping_the_database_and_rebuilding_from_tags_yields_the_same_ownership(world: World,
                                                                                  postgres_server: Any) -> None:
    etl, train = contract("etl", "T3"), contract("train", "T1", floor_pct=30)
    world.source.demand(etl.ref, 80)
    world.source.demand(train.ref, 60, prefix="t")
    world.run(world.controller(contracts(etl, train)), 12)
    before = ownership(world.conn, "r1")
    assert len(before) == len(world.mine())
    fresh = psycopg.connect(postgres_server.create_database(), autocommit=True)
    migrate.migrate_postgres(fresh)
    report = rebuild(world.log, fresh, world.clock.now())
    assert report.instances == len(before) and ownership(fresh, "r1") == before
    world.conn = fresh
    world.log.calls.clear()
    ctl = world.controller(contracts(etl, train), holder="c3")
    world.run(ctl, 5)
    assert not world.log.calls, "the recomputed plan matches what the tags say: nothing to do"
    fresh.close()


def test_launches_carry_owner_tags_and_a_cloud_config_with_the_signed_agent_bundle_and_a_minted_credential(
        world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 30)
    creds = MemoryAgentCredentials()
    ctl = world.controller(contracts(etl), agent_bundle=(b'{"kind":"AgentBundle"}', b"c2lnbmF0dXJl\n"),
                           agent_credentials=creds, nats_urls=("nats://relay.h1:4222",),
                           metadata_url="http://169.254.169.254/metadata/{instance}",
                           distributor_url="https://bundles.r1:8443")
    world.run(ctl, 6)
    assert world.log.requests
    launched: dict[str, str] = {}
    for request in world.log.requests:
        text = request.user_data or ""
        assert text.startswith("## template: jinja\n#cloud-config\n")
        files = {f["path"]: f for f in yaml.safe_load(text)["write_files"]}
        doc = json.loads(files["/etc/sco/agent-userdata.json"]["content"])
        assert doc["kind"] == "AgentUserData" and doc["partition"] == PARTITION and doc["scheduler"] == "slurm"
        assert doc["instance"] == "{{ v1.instance_id }}" and doc["nats_urls"] == ["nats://relay.h1:4222"]
        assert doc["metadata_url"] == "http://169.254.169.254/metadata/{{ v1.instance_id }}"
        assert doc["distributor_url"] == f"https://bundles.r1:8443/{PARTITION}/"
        assert base64.b64decode(doc["bundle"]) == b'{"kind":"AgentBundle"}' and doc["bundle_sig"] == "c2lnbmF0dXJl"
        password = base64.b64decode(files["/etc/sco/nats.password"]["content"]).decode()
        launched.update({i.instance_id: password for i in world.region.list_instances()
                         if i.metadata.get("sco_launch_key") == request.metadata["sco_launch_key"]})
        assert request.owner.workload == "etl" and request.owner.partition == PARTITION
        assert request.metadata["sco_purpose"] == "reclaimable" and request.metadata["sco_launch_key"]
    assert launched and creds.minted == {("r1", iid): password for iid, password in launched.items()}
    assert len(set(launched.values())) == len(world.log.requests), "one password per launch request"
    tags = world.mine()[0].tags
    assert {t.split("=")[0] for t in tags} >= {"sco:workload", "sco:pool", "sco:partition", "sco:generation"}


def test_a_controller_given_relay_urls_but_no_credential_source_launches_nothing_and_says_why(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 30)
    world.run(world.controller(contracts(etl), agent_bundle=(b'{"kind":"AgentBundle"}', b"c2ln\n"),
                               nats_urls=("nats://relay.h1:4222",)), 3)
    assert not world.log.requests
    failed = world.events("launch-failed")
    assert failed and failed[0]["attributes"]["code"] == "userdata-nats-credential"


class BrokenScheduler(FakeSource):
    def work(self) -> list[Any]:
        raise RuntimeError("squeue --json failed (rc 1): slurmctld not responding")


def test_a_scheduler_that_does_not_answer_changes_nothing(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 40)
    ctl = world.controller(contracts(etl))
    world.run(ctl, 6)
    fleet = len(world.mine())
    ctl.source = BrokenScheduler()
    world.log.calls.clear()
    for _ in range(3):
        with pytest.raises(RuntimeError, match="slurmctld"):
            ctl.step()
    assert not world.log.calls and len(world.mine()) == fleet


class HalfListing:
    """A provider whose listing suddenly loses half of the instances (a glitch, or tags wiped by someone)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.broken = False

    def list_instances(self, tags: Any = None) -> tuple[Any, ...]:
        found = tuple(self.inner.list_instances(tags))
        return found[: len(found) // 2] if self.broken else found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_instances_vanishing_from_the_listing_trip_the_breaker_instead_of_a_mass_relaunch(world: World) -> None:
    etl = contract("etl", "T3")
    world.source.demand(etl.ref, 100)
    ctl = world.controller(contracts(etl))
    world.run(ctl, 10)
    fleet = len(world.mine())
    glitch = HalfListing(ctl.provider)
    ctl.provider = glitch
    glitch.broken = True
    world.log.calls.clear()
    reports = [ctl.step() for _ in range(3)]
    assert all(r.read_only and r.launched == 0 for r in reports) and not world.log.calls
    assert len(world.mine()) == fleet and not world.revoker.banned
    trips = world.events("breaker-tripped")
    assert len(trips) == 1 and trips[0]["attributes"]["kind"] == "mass-loss"
    glitch.broken = False  # the listing agrees again: the pass acts, nothing to launch, terminations stay halted
    report = ctl.step()
    assert not report.read_only and report.launched == 0 and ctl.safety.tripped
