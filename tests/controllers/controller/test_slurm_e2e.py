"""End to end with the real Slurm test bed: pending jobs with ``--comment=contract=<name>@<version>`` in the
reclaimable partition become instances in the simulated region across at least eight pools; a job without a
contract is refused with an event. Needs ``deploy/testbed/slurm/up``."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pytest

from controllers.controller.breaker import SafetyConfig
from controllers.controller.claims_slurm import SlurmSource
from controllers.controller.loop import Controller, ControllerSettings
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from testkit.builders import PARTITION, contract, contracts
from tests.controllers.controller.helpers import StepClock
from tests.support.testbeds import SLURM_CONF

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("slurm-bed")]
CONF = SLURM_CONF


def sbatch(*args: str) -> str:
    out = subprocess.run(["sbatch", "--parsable", "--hold", "-p", "reclaimable", *args, "--wrap", "sleep 60"],
                         capture_output=True, text=True, env={**os.environ, "SLURM_CONF": CONF}, check=True)
    return out.stdout.strip().split(";")[0]


@pytest.fixture
def jobs() -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    if made:
        subprocess.run(["scancel", *made], env={**os.environ, "SLURM_CONF": CONF}, check=False)


def test_pending_contracted_slurm_jobs_become_instances_across_at_least_8_pools(jobs: list[str],
                                                                                pg_migrated_url: str) -> None:
    etl = contract("etl", "T3", vcpu=1, mem=1)
    jobs += [sbatch("-c", "1", f"--comment=contract={etl.ref}") for _ in range(40)]
    jobs += [sbatch("-c", "1")]  # no contract: refused, never placed
    clock = StepClock()
    region = SimulatedRegion(RegionConfig(reclaim_rate_pct_h=0, hall_reclaims_per_30d=0), clock)
    conn = psycopg.connect(pg_migrated_url, autocommit=True)
    ctl = Controller(ControllerSettings("r1", PARTITION, safety=SafetyConfig(recovery_share=Decimal(1))), region, conn,
                     SlurmSource(("reclaimable",), slurm_conf=CONF), contracts(etl), clock)
    for _ in range(4):
        ctl.step()
        clock.advance(seconds=5)
    plan = ctl.previous.plans["etl"] if ctl.previous else None
    assert plan is not None and plan.wanted_units >= 40
    pools = Counter(i.pool_id for i in region.list_instances())
    assert len(pools) >= 8
    units = {a.pool_id: a.units for a in plan.allocations}
    assert max(units.values()) <= Decimal("0.15") * sum(units.values())
    kinds = [r[0] for r in conn.execute("SELECT convert_from(payload, 'utf8')::json->>'kind' FROM outbox")]
    assert kinds.count("claim-refused") >= 1
    conn.close()
