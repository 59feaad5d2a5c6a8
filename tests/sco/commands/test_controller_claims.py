"""``sco controller run``'s claim source: slurmrestd with ``--slurm-rest-url`` (or ``SCO_SLURM_*``), squeue without;
a REST URL without a user or token file, or a timeout out of bounds, is refused naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.controller.claims_slurm import SlurmSource
from controllers.controller.claims_slurmrest import SlurmRestSource
from sco.cli import CliError, build_parser
from sco.commands.controller_claims import FileSource, claim_source
from testkit.slurmrestd import FakeSlurmrestd, jwt

RUN = ["controller", "run", "--partition", "r1/slurm-hpc", "--bundle", "b", "--pubkey", "k"]


def test_with_a_rest_url_the_controller_reads_slurm_through_slurmrestd(tmp_path: Path) -> None:
    token = jwt("sco", 4_000_000_000)
    (tmp_path / "token").write_text(token)
    server = FakeSlurmrestd({token: "sco"}, jobs=[{"job_id": 3, "job_state": "PENDING", "partition": "hpc",
                                                   "comment": "contract=etl@1", "cpus": 1}])
    try:
        args = build_parser().parse_args([*RUN, "--slurm-rest-url", server.url, "--slurm-user", "sco",
                                          "--slurm-token-file", str(tmp_path / "token"), "--slurm-partitions", "hpc"])
        source = claim_source(args)
        assert isinstance(source, SlurmRestSource)
        assert [(i.item_id, i.contract_ref) for i in source.work()] == [("3", "etl@1")]
    finally:
        server.stop()


def test_the_slurmrestd_options_default_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCO_SLURM_REST_URL", "http://slurmrestd:6820")
    monkeypatch.setenv("SCO_SLURM_USER", "sco")
    monkeypatch.setenv("SCO_SLURM_TOKEN_FILE", "/etc/sco/slurm/token")
    source = claim_source(build_parser().parse_args(RUN))
    assert isinstance(source, SlurmRestSource)
    assert (source.url, source.user, source.token_file) == ("http://slurmrestd:6820", "sco", "/etc/sco/slurm/token")


def test_without_a_rest_url_the_controller_runs_squeue_and_a_claims_file_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SCO_SLURM_REST_URL", "SCO_SLURM_USER", "SCO_SLURM_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    assert isinstance(claim_source(build_parser().parse_args(RUN)), SlurmSource)
    assert isinstance(claim_source(build_parser().parse_args([*RUN, "--claims-file", "c.json", "--slurm-rest-url",
                                                              "http://x"])), FileSource)


@pytest.mark.parametrize(("extra", "code", "names"), [
    (["--slurm-user", "sco"], "SLURMREST006", "--slurm-token-file"),
    (["--slurm-token-file", "t"], "SLURMREST006", "--slurm-user"),
    (["--slurm-user", "sco", "--slurm-token-file", "t", "--slurm-timeout", "0"], "SLURMREST007", "--slurm-timeout 0")])
def test_a_rest_url_without_what_it_needs_is_refused_naming_the_flag(
        monkeypatch: pytest.MonkeyPatch, extra: list[str], code: str, names: str) -> None:
    for var in ("SCO_SLURM_USER", "SCO_SLURM_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    args = build_parser().parse_args([*RUN, "--slurm-rest-url", "http://slurmrestd:6820", *extra])
    with pytest.raises(CliError, match=code) as caught:
        claim_source(args)
    assert names in str(caught.value)
