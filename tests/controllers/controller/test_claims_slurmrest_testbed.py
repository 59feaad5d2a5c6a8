"""Against the Slurm test bed's real slurmrestd (deploy/testbed/slurm/up: Debian's 22.05, JWT): contracted jobs
in the reclaimable partition read through slurmrestd are the work items ``squeue --json`` gives, the idle nodes
agree with ``sinfo --json``, a wrong token is refused with its stable code, and the local stand-in
(testkit.slurmrestd) answers the statuses the real one does."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controllers.controller.claims_slurm import SlurmSource
from controllers.controller.claims_slurmrest import SlurmRestError, SlurmRestSource, UrllibGet
from testkit.slurmrestd import FakeSlurmrestd, jwt
from tests.support.testbeds import SLURM_CONF, slurm_rest_url

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("slurm-bed")]
USER = "nobody"  # any account of the host: the token names it, slurmctld maps it to a uid
ENV = {**os.environ, "SLURM_CONF": SLURM_CONF}


def slurm(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, env=ENV, check=True, timeout=20).stdout


def mint(user: str, lifespan_s: int = 600) -> str:
    """A token as an operator mints one (``scontrol token``, as root), in the form it prints."""
    return slurm("scontrol", "token", f"username={user}", f"lifespan={lifespan_s}").strip()


@pytest.fixture
def jobs() -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    if made:
        subprocess.run(["scancel", *made], env=ENV, check=False, timeout=20)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(mint(USER) + "\n")
    return path


def sbatch(*args: str) -> str:
    out = slurm("sbatch", "--parsable", "-o", "/dev/null", "-p", "reclaimable", *args, "--wrap", "sleep 120")
    return out.strip().split(";")[0]


def test_contracted_jobs_read_through_slurmrestd_are_the_work_items_squeue_gives(jobs: list[str],
                                                                                 token_file: Path) -> None:
    jobs += [sbatch("-c", "1", "--comment=contract=etl@1") for _ in range(2)]          # these run
    jobs += [sbatch("--hold", "-c", "1", "--mem=200", "--comment=contract=etl@1") for _ in range(3)]
    jobs += [sbatch("--hold", "-c", "1")]                                              # no contract
    rest = SlurmRestSource(slurm_rest_url(), USER, str(token_file), ("reclaimable",))
    cli = SlurmSource(("reclaimable",), slurm_conf=SLURM_CONF)
    deadline = time.monotonic() + 20
    while sum(i.state == "running" for i in cli.work() if i.item_id in jobs) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    through_rest = rest.work()
    assert through_rest == cli.work()
    mine = [i for i in through_rest if i.item_id in jobs]
    assert sorted((i.state, i.contract_ref or "") for i in mine) == [
        ("pending", ""), *[("pending", "etl@1")] * 3, *[("running", "etl@1")] * 2]
    assert rest.idle_nodes() == cli.idle_nodes()
    assert len(rest.idle_nodes()) <= 2  # two of the reclaimable nodes run our jobs


def test_a_token_minted_for_another_user_is_slurmrest001(token_file: Path) -> None:
    token_file.write_text(mint("root"))
    with pytest.raises(SlurmRestError) as caught:
        SlurmRestSource(slurm_rest_url(), USER, str(token_file)).work()
    assert caught.value.code == "SLURMREST001" and "minted for user 'root'" in str(caught.value)


def test_a_token_not_signed_with_the_clusters_key_is_refused_with_slurmrest004(token_file: Path) -> None:
    token_file.write_text(jwt(USER, time.time() + 600))  # well formed, fresh, this user's: a forged signature
    with pytest.raises(SlurmRestError) as caught:
        SlurmRestSource(slurm_rest_url(), USER, str(token_file)).idle_nodes()
    assert caught.value.code == "SLURMREST004" and "HTTP 500" in str(caught.value)


def test_the_stand_in_answers_the_statuses_the_real_slurmrestd_does() -> None:
    real, fake = slurm_rest_url(), FakeSlurmrestd({})
    forged = {"X-SLURM-USER-NAME": USER, "X-SLURM-USER-TOKEN": jwt(USER, time.time() + 600)}
    try:
        for path, headers in (("/slurm/v0.0.38/jobs", {}), ("/slurm/v0.0.38/jobs", forged),
                              ("/slurm/v0.0.38/nodes", forged), ("/slurm/v0.0.99/jobs", forged)):
            answers = [UrllibGet().get(base + path, headers, 20) for base in (real, fake.url)]
            assert answers[0][0] == answers[1][0], (path, headers.keys(), answers)
            assert answers[0][1][:40] == answers[1][1][:40] or answers[0][0] == 500, (path, answers)
    finally:
        fake.stop()
