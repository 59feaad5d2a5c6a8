"""ADR-32's canary through the real distributor over HTTP, with real signed bundles and the agent's own bundle
cache (``agent.bundle``) on one simulated node per partition, on virtual time: a bad release reaches the canary
partition only and is rolled back; a good one is promoted after its soak and not a minute before."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.bundle import BundleStore, fetch_bundle
from agent.httpwire import exchange
from contracts.events import Event
from contracts.settings import CompilerSettings
from contracts.signing import KeyPair
from distributor import ClickHouseGates, GateFigures, Promote, Releases, RollBack, StartCanary, plan_rollout
from stores import clickhouse
from stores.eventrows import EVENT_COLUMNS, INSERT_FORMAT, encode_rows, row_of
from tests.agent.helpers import make_bundle, new_keys, workload_entry, write_bundle_dir
from tests.distributor.test_server import AGENT, Running
from tests.doubles.gates import RecordedGates

CANARY, OTHERS = "r1/slurm-hpc", ("r1/k8s-batch", "r2/slurm-batch")
PARTITIONS = (CANARY, *OTHERS)
SETTINGS = CompilerSettings(canary_partition=CANARY)  # the default soak: 24 h
T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def compile_out(directory: Path, keys: KeyPair, generation: int, issued_at: datetime,
                source_digest: str | None = None) -> Path:
    """What `sco contracts compile --out` writes, one agent bundle per partition."""
    for partition in PARTITIONS:
        raw, sig = make_bundle(keys, partition, generation, [workload_entry("etl", version=str(generation))],
                               issued_at=issued_at, source_digest=source_digest)
        write_bundle_dir(directory / partition, raw, sig)
    return directory


class ClickHouseEvents:
    """The production gate adapter over the real ``events`` table; ``record`` inserts as the ingest does."""

    def __init__(self, client: Any) -> None:
        self.client, self.gates = client, ClickHouseGates(client)

    def record(self, event: Event) -> None:
        self.client.raw_insert("events", EVENT_COLUMNS, encode_rows([row_of(event)]), fmt=INSERT_FORMAT)

    def figures(self, partition: str, since: datetime, until: datetime) -> GateFigures:
        return self.gates.figures(partition, since, until)


class Fleet:
    """The distributor, one node's bundle cache per partition, the gate events and the virtual clock."""

    def __init__(self, tmp: Path, keys: KeyPair, gates: RecordedGates | ClickHouseEvents) -> None:
        self.root, self.keys, self.now = tmp / "bundles", keys, [T0]
        compile_out(self.root, keys, 1, T0 - timedelta(days=2))
        self.running = Running(self.root, self.now)
        self.releases, self.gates = Releases(self.root), gates
        self.nodes = {p: BundleStore(tmp / "nodes" / p, keys.public_pem, p) for p in PARTITIONS}
        self.etags: dict[str, str | None] = dict.fromkeys(PARTITIONS)

    def served(self, partition: str) -> tuple[str, bytes]:
        status, headers, body = exchange("GET", f"{self.running.url}/{partition}/agent-bundle.json", headers=AGENT)
        assert status == 200
        return headers["etag"], body

    def refresh(self) -> None:
        """Every node asks the distributor, as `sco-agent run` does; a refusal becomes its bundle-refused event."""
        for partition, node in self.nodes.items():
            got = fetch_bundle(f"{self.running.url}/{partition}/", headers=AGENT, etag=self.etags[partition])
            if got is None:
                continue
            raw, sig, etag = got
            outcome = node.offer(raw, sig, "distributor").outcome
            if outcome in ("accepted", "unchanged"):  # as agent.runtime: a refused bundle is asked for again
                self.etags[partition] = etag
            if outcome == "refused":
                self.gates.record(Event(kind="bundle-refused", time=self.now[0], region=partition.split("/")[0],
                                        partition=partition, instance=f"i-{partition.replace('/', '-')}",
                                        cause="bundle-verification", source="agent"))

    def rollout_pass(self) -> list[object]:
        """One `sco distributor rollout` pass at the virtual now."""
        actions = plan_rollout(self.releases.observe(self.gates, SETTINGS, self.now[0]), SETTINGS, self.now[0])
        self.releases.apply(actions, self.now[0])
        return list(actions)

    def generation(self, partition: str) -> int:
        held = self.nodes[partition].current
        return 0 if held is None else held.generation

    def drains(self, start: datetime, count: int, overruns: int) -> None:
        """``count`` finished drains on the canary partition, ``overruns`` of them overran (a simulated region)."""
        for i in range(count):
            self.gates.record(Event(kind="overrun" if i < overruns else "drained", time=start + timedelta(minutes=i),
                                    region="r1", partition=CANARY, instance=f"i-{i}", cause="drain", source="agent"))


@pytest.fixture(params=["double", pytest.param("clickhouse", marks=pytest.mark.services)])
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    """The gate figures from the test double, or from ClickHouse (``sco clickhouse serve``) as in production."""
    client = clickhouse.client(request.getfixturevalue("clickhouse_migrated_url")) \
        if request.param == "clickhouse" else None
    fleet = Fleet(tmp_path, new_keys(), RecordedGates() if client is None else ClickHouseEvents(client))
    yield fleet
    fleet.running.close()
    if client is not None:
        client.close()


@pytest.mark.parametrize("bad", ["signed-with-another-key", "more-overruns"])
def test_a_bad_release_is_rolled_back_without_reaching_the_other_partitions_and_a_good_one_is_promoted_after_its_soak(
        fleet: Fleet, tmp_path: Path, bad: str) -> None:
    fleet.refresh()
    assert {p: fleet.generation(p) for p in PARTITIONS} == dict.fromkeys(PARTITIONS, 1)
    before = {p: fleet.served(p) for p in PARTITIONS}
    fleet.drains(T0 - timedelta(hours=2), count=20, overruns=1)  # the previous generation: 1 overrun in 20

    def others_untouched() -> None:
        assert {p: fleet.served(p) for p in OTHERS} == {p: before[p] for p in OTHERS}

    # a bad release: staged, then served to the canary partition only
    key = new_keys() if bad == "signed-with-another-key" else fleet.keys
    fleet.releases.stage(compile_out(tmp_path / "compile-2", key, 2, T0))
    assert fleet.rollout_pass() == [StartCanary(release=1, partition=CANARY)]
    fleet.refresh()
    assert fleet.served(CANARY) != before[CANARY]
    others_untouched()
    if bad == "more-overruns":
        assert fleet.generation(CANARY) == 2  # the canary's node took it
        fleet.drains(T0 + timedelta(minutes=10), count=20, overruns=6)
    else:
        assert fleet.generation(CANARY) == 1 and fleet.nodes[CANARY].refused == 1
    fleet.now[0] = T0 + timedelta(hours=2)
    rolled = fleet.rollout_pass()
    assert len(rolled) == 1 and isinstance(rolled[0], RollBack)
    assert ("bundle-refused" if bad == "signed-with-another-key" else "overrun rate") in rolled[0].reason
    assert fleet.served(CANARY) == before[CANARY]  # the canary is back on the previous generation
    others_untouched()
    assert fleet.releases.state["state"] == "rolled-back"
    assert rolled[0].reason in (fleet.root / ".rollout" / "quarantine" / "1" / "reason.txt").read_text()
    fleet.refresh()  # a node that took the candidate refuses the older generation (and keeps the candidate)
    assert all(fleet.generation(p) == 1 for p in OTHERS)
    others_untouched()
    fleet.now[0] = T0 + timedelta(days=3)
    assert fleet.rollout_pass() == []  # nothing more happens to a quarantined release

    # a good release: on the canary from `start`, held through the soak, promoted after it
    start = fleet.now[0]
    fleet.releases.stage(compile_out(tmp_path / "compile-3", fleet.keys, 3, start))
    assert fleet.rollout_pass() == [StartCanary(release=2, partition=CANARY)]
    fleet.drains(start - timedelta(hours=3), count=20, overruns=1)
    fleet.drains(start + timedelta(hours=1), count=20, overruns=1)
    for hours in (0.5, 12, 23.98):
        fleet.now[0] = start + timedelta(hours=hours)
        fleet.refresh()
        assert fleet.rollout_pass()[0].__class__.__name__ == "Hold"
        assert fleet.generation(CANARY) == 3
        others_untouched()
        assert all(fleet.generation(p) == 1 for p in OTHERS)
    fleet.now[0] = start + timedelta(hours=24)
    assert fleet.rollout_pass() == [Promote(release=2)]
    fleet.refresh()
    assert {p: fleet.generation(p) for p in PARTITIONS} == dict.fromkeys(PARTITIONS, 3)
    assert all(fleet.served(p) != before[p] for p in PARTITIONS)
    # the canary node refused once: the foreign signature, or (after taking the overrunning candidate) the
    # previous generation served again after the rollback
    assert fleet.nodes[CANARY].refused == 1
    assert fleet.generation(CANARY) == 3
    assert fleet.rollout_pass() == []  # promoted: nothing staged any more
