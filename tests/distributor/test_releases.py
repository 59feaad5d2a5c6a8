"""Releases on the distributor's disk: staging refuses what would break agents' succession, the canary reads the
staged files, and promotion and rollback are keyed by the release and finish an interrupted run exactly once."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from contracts.settings import CompilerSettings
from distributor import (
    BundleFile,
    Catalog,
    Hold,
    Promote,
    Releases,
    RollBack,
    StartCanary,
    partition_generation,
    plan_rollout,
)
from distributor.errors import RolloutError
from tests.agent.helpers import new_keys
from tests.distributor.test_canary import CANARY, OTHERS, PARTITIONS, compile_out
from tests.doubles.gates import RecordedGates

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
KEYS = new_keys()
SETTINGS = CompilerSettings(canary_partition=CANARY)


def _staged(tmp: Path) -> Releases:
    compile_out(tmp / "root", KEYS, 1, T0)
    releases = Releases(tmp / "root")
    assert releases.stage(compile_out(tmp / "c2", KEYS, 2, T0)) == 1
    return releases


def test_the_canary_reads_the_staged_files_and_every_other_partition_the_served_tree(tmp_path: Path) -> None:
    releases = _staged(tmp_path)
    catalog = Catalog(releases.root)
    gen = {p: partition_generation(releases.root / p) for p in PARTITIONS}
    assert gen == dict.fromkeys(PARTITIONS, 1)
    def get(partition: str) -> BundleFile | None:
        region, cluster = partition.split("/")
        return catalog.get(region, cluster, "agent-bundle.json")

    before = {p: get(p) for p in PARTITIONS}
    assert all(b is not None and b'"generation":1' in b.data for b in before.values())  # staged is not started
    releases.apply([StartCanary(release=1, partition=CANARY)], T0)
    canary = get(CANARY)
    assert canary is not None and b'"generation":2' in canary.data
    assert all(get(p) == before[p] for p in OTHERS)
    assert catalog.partitions() == sorted(PARTITIONS)
    assert catalog.get(".rollout", "staged", "agent-bundle.json") is None  # the rollout's files are never served
    assert catalog.get(".rollout", "1", "agent-bundle.json") is None


def test_staging_refuses_while_a_release_is_on_the_canary_and_a_directory_without_bundles(tmp_path: Path) -> None:
    releases = _staged(tmp_path)
    with pytest.raises(RolloutError, match="ROL001: release 1 is still staged"):
        releases.stage(compile_out(tmp_path / "c3", KEYS, 3, T0))
    (tmp_path / "empty").mkdir()
    releases.apply([RollBack(release=1, reason="test")], T0)
    with pytest.raises(RolloutError, match=r"ROL002: --from .*empty holds no"):
        releases.stage(tmp_path / "empty")


def test_a_release_must_be_newer_than_the_quarantined_one_its_canary_nodes_may_hold(tmp_path: Path) -> None:
    releases = _staged(tmp_path)
    releases.apply([StartCanary(release=1, partition=CANARY), RollBack(release=1, reason="overruns")], T0)
    with pytest.raises(RolloutError, match=r"ROL004: .* generation 2 .* cannot follow generation 2 .*"
                                           r"quarantine/1 \(nodes may hold it\); compile again with `--previous"):
        releases.stage(compile_out(tmp_path / "again-2", KEYS, 2, T0, source_digest="sha256:" + "e" * 64))
    with pytest.raises(RolloutError, match=r"ROL004: .* generation 1 .* cannot follow generation 2"):
        releases.stage(compile_out(tmp_path / "older", KEYS, 1, T0))
    assert releases.stage(compile_out(tmp_path / "c3", KEYS, 3, T0)) == 2


def test_an_interrupted_promotion_run_again_finishes_it_once_and_keeps_the_previous_generation(
        tmp_path: Path) -> None:
    releases = _staged(tmp_path)
    root = releases.root
    releases.apply([StartCanary(release=1, partition=CANARY)], T0)
    # the promotion died after moving one partition's served directory away (before the staged one moved in)
    (root / ".rollout" / "previous" / "1" / "r1").mkdir(parents=True)
    os.rename(root / OTHERS[0], root / ".rollout" / "previous" / "1" / OTHERS[0])
    done = releases.apply([Promote(release=1)], T0 + timedelta(hours=25))
    assert "promoted" in done[0]
    assert {p: partition_generation(root / p) for p in PARTITIONS} == dict.fromkeys(PARTITIONS, 2)
    assert {p: partition_generation(root / ".rollout" / "previous" / "1" / p) for p in PARTITIONS} == \
        dict.fromkeys(PARTITIONS, 1)
    assert releases.apply([Promote(release=1)], T0 + timedelta(hours=26)) == ["release 1: already promoted"]
    assert {p: partition_generation(root / p) for p in PARTITIONS} == dict.fromkeys(PARTITIONS, 2)


def test_a_rollback_is_idempotent_and_an_action_for_another_release_is_refused(tmp_path: Path) -> None:
    releases = _staged(tmp_path)
    releases.apply([StartCanary(release=1, partition=CANARY)], T0)
    releases.apply([RollBack(release=1, reason="2 overruns")], T0)
    assert releases.apply([RollBack(release=1, reason="again")], T0) == ["release 1: already rolled back"]
    assert (releases.root / ".rollout" / "quarantine" / "1" / "reason.txt").read_text() == "2 overruns\n"
    with pytest.raises(RolloutError, match="ROL003: the action names release 7"):
        releases.apply([Promote(release=7)], T0)


def test_the_rollout_holds_with_the_canary_serving_while_the_gate_figures_cannot_be_read(tmp_path: Path) -> None:
    releases, gates = _staged(tmp_path), RecordedGates()
    releases.apply(plan_rollout(releases.observe(gates, SETTINGS, T0), SETTINGS, T0), T0)
    gates.down = True
    later = T0 + timedelta(hours=30)
    observed = releases.observe(gates, SETTINGS, later)
    assert observed.candidate is None and observed.partitions[CANARY] == (1, 2)
    actions = plan_rollout(observed, SETTINGS, later)
    assert isinstance(actions[0], Hold) and actions[0].reason.startswith("CAN003")
    gates.down = False
    assert plan_rollout(releases.observe(gates, SETTINGS, later), SETTINGS, later) == [Promote(release=1)]
