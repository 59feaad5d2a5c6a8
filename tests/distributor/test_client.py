"""The controller's feed of its partition's agent bundle from the distributor: a newer verified generation is
taken (and then 304s), anything else is refused and counted, the held copy stays."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.signing import KeyPair
from distributor import AgentBundleFeed
from tests.agent.helpers import make_bundle, new_keys, workload_entry, write_bundle_dir
from tests.distributor.test_server import Running

PARTITION = "r1/slurm-hpc"


@pytest.fixture
def bed(tmp_path: Path) -> Iterator[tuple[Running, Path, KeyPair]]:
    keys = new_keys()
    write_bundle_dir(tmp_path / "r1" / "slurm-hpc", *make_bundle(keys, PARTITION, 2, [workload_entry("etl")]))
    running = Running(tmp_path, [datetime.now(UTC)])
    yield running, tmp_path, keys
    running.close()


def feed(running: Running, keys: KeyPair, held: tuple[bytes, bytes] | None,
         token: str = "ctl-token") -> AgentBundleFeed:
    return AgentBundleFeed(running.url, PARTITION, keys.public_pem, f"Bearer {token}", held=held)


def test_a_newer_generation_is_taken_then_the_distributor_answers_304(bed: tuple) -> None:
    running, root, keys = bed
    f = feed(running, keys, make_bundle(keys, PARTITION, 1, [workload_entry("etl")]))
    got = f.poll()
    assert got is not None and got[0] == (root / "r1" / "slurm-hpc" / "agent-bundle.json").read_bytes()
    assert f.poll() is None and running.server.responses[304] == 1
    write_bundle_dir(root / "r1" / "slurm-hpc", *make_bundle(keys, PARTITION, 3, [workload_entry("etl")]))
    newer = f.poll()
    assert newer is not None and b'"generation":3' in newer[0] and f.refused == 0


@pytest.mark.parametrize(("case", "reason"), [
    ("older", "older than the previous"),
    ("foreign-key", "signature"),
    ("other-partition", "not this partition's agent bundle"),
])
def test_an_older_foreign_or_misplaced_bundle_is_refused_and_the_held_copy_stays(bed: tuple, case: str,
                                                                                 reason: str) -> None:
    running, root, keys = bed
    held = make_bundle(keys, PARTITION, 5, [workload_entry("etl")])
    if case == "foreign-key":
        write_bundle_dir(root / "r1" / "slurm-hpc", *make_bundle(new_keys(), PARTITION, 6, [workload_entry("etl")]))
    elif case == "other-partition":
        write_bundle_dir(root / "r1" / "slurm-hpc", *make_bundle(keys, "r1/k8s", 6, [workload_entry("etl")]))
    f = feed(running, keys, held)
    assert f.poll() is None
    assert f.refused == 1 and reason in f.last_error and f.held == held


def test_without_the_right_credential_nothing_is_taken(bed: tuple) -> None:
    running, _, keys = bed
    f = feed(running, keys, None, token="not-it")
    assert f.poll() is None and "401" in f.last_error and f.held is None
