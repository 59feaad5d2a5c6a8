"""Slurm claims through slurmrestd, against a local HTTP server answering as Debian's slurmrestd 22.05 does
(testkit.slurmrestd): the same work items as ``squeue --json`` would give, the token read from its file on every
request, and each failure mapped to its stable code with the user, the token file and the fix — never a
traceback. The real slurmrestd of the Slurm test bed: test_claims_slurmrest_testbed.py."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controllers.controller.claims import WorkItem
from controllers.controller.claims_slurmrest import SlurmRestError, SlurmRestSource, token_problem
from testkit.slurmrestd import FakeSlurmrestd, jwt

NOW = 1_800_000_000.0
GOOD = jwt("sco", NOW + 600)
JOBS: list[dict[str, Any]] = [
        {"job_id": 8, "job_state": "PENDING", "partition": "reclaimable", "comment": "contract=etl@1",
         "tres_req_str": "cpu=2,mem=4G,node=1", "cpus": 2, "nodes": ""},
        {"job_id": 9, "job_state": "RUNNING", "partition": "reclaimable", "comment": "contract=etl@1",
         "tres_req_str": "cpu=1,mem=1G", "nodes": "node2"},
        {"job_id": 10, "job_state": "PENDING", "partition": "guaranteed", "comment": "contract=etl@1"}]
NODES: list[dict[str, Any]] = [{"name": "node1", "state": "idle", "state_flags": []},
                               {"name": "node2", "state": "allocated"}]


@pytest.fixture
def server() -> Iterator[FakeSlurmrestd]:
    fake = FakeSlurmrestd({GOOD: "sco"}, jobs=JOBS, nodes=NODES)
    yield fake
    fake.stop()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(GOOD + "\n")
    return path


def source(url: str, token_file: Path, user: str = "sco", timeout_s: float = 2.0) -> SlurmRestSource:
    return SlurmRestSource(url, user, str(token_file), ("reclaimable",), timeout_s=timeout_s, clock=lambda: NOW)


def code_of(call: object) -> SlurmRestError:
    with pytest.raises(SlurmRestError) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_jobs_and_nodes_are_read_with_the_user_and_token_headers(server: FakeSlurmrestd, token_file: Path) -> None:
    src = source(server.url, token_file)
    assert src.work() == [WorkItem("slurm", "8", "etl@1", 2.0, 4.0, "pending"),
                          WorkItem("slurm", "9", "etl@1", 1.0, 1.0, "running", "node2")]
    assert src.idle_nodes() == {"node1"}
    assert {(h["x-slurm-user-name"], h["x-slurm-user-token"]) for h in server.seen} == {("sco", GOOD)}


def test_the_token_is_read_from_its_file_on_every_request_so_a_rotated_secret_is_taken(
        server: FakeSlurmrestd, token_file: Path) -> None:
    src = source(server.url, token_file)
    src.work()
    rotated = jwt("sco", NOW + 1200)
    server.tokens[rotated] = "sco"
    token_file.write_text(f"SLURM_JWT={rotated}\n")  # as `scontrol token` prints it
    src.work()
    assert [h["x-slurm-user-token"] for h in server.seen] == [GOOD, rotated]


def test_a_refusal_by_slurmrestd_is_slurmrest001_naming_the_user_the_file_and_how_to_mint_a_token(
        server: FakeSlurmrestd, token_file: Path) -> None:
    server.mode = "unauthenticated"
    err = code_of(source(server.url, token_file).work)
    assert err.code == "SLURMREST001" and "HTTP 401" in str(err) and "user sco" in str(err)
    assert str(token_file) in str(err) and "scontrol token username=sco lifespan=" in err.fix


def test_a_token_signed_with_another_key_is_slurmrest004_which_names_the_token_as_a_cause(
        server: FakeSlurmrestd, token_file: Path) -> None:
    server.tokens.clear()  # slurmctld refuses the signature; 22.05's slurmrestd answers 500 "Unspecified error"
    err = code_of(source(server.url, token_file).work)
    assert err.code == "SLURMREST004" and "HTTP 500" in str(err)
    assert "jwt_key" in err.fix and "scontrol token username=sco" in err.fix


@pytest.mark.parametrize(("token", "why"), [
    (jwt("sco", NOW - 1), "expired at 2027-01-15T07:59:59+00:00"),
    (jwt("root", NOW + 600), "was minted for user 'root', not 'sco'"),
    ("not-a-token", "is not a JWT")])
def test_a_token_that_cannot_be_accepted_is_refused_before_the_request_with_slurmrest001(
        server: FakeSlurmrestd, token_file: Path, token: str, why: str) -> None:
    token_file.write_text(token)
    err = code_of(source(server.url, token_file).work)
    assert err.code == "SLURMREST001" and why in str(err) and "user sco" in str(err)
    assert str(token_file) in str(err) and "scontrol token username=sco" in err.fix
    assert server.seen == []


def test_token_problem_is_none_for_a_fresh_token_of_the_user() -> None:
    assert token_problem(GOOD, "sco", NOW) is None
    assert token_problem(jwt("sco", NOW), "sco", NOW) == "expired at 2027-01-15T08:00:00+00:00"


def test_a_missing_or_empty_token_file_is_slurmrest005(server: FakeSlurmrestd, tmp_path: Path) -> None:
    assert code_of(source(server.url, tmp_path / "absent").work).code == "SLURMREST005"
    (tmp_path / "empty").write_text("\n")
    err = code_of(source(server.url, tmp_path / "empty").idle_nodes)
    assert err.code == "SLURMREST005" and "is empty" in str(err)


def test_connection_refused_and_a_timeout_are_slurmrest002_within_the_bound(
        server: FakeSlurmrestd, token_file: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    err = code_of(source(closed, token_file).work)
    assert err.code == "SLURMREST002" and closed in str(err) and "--slurm-rest-url" in err.fix
    server.mode, server.delay_s = "slow", 1.5
    err = code_of(source(server.url, token_file, timeout_s=0.3).work)
    assert err.code == "SLURMREST002" and "within 0.3 s" in str(err)


def test_an_answer_that_is_not_json_is_slurmrest003(server: FakeSlurmrestd, token_file: Path) -> None:
    server.mode = "html"
    err = code_of(source(server.url, token_file).work)
    assert err.code == "SLURMREST003" and "<html>" in str(err)


def test_slurmctld_unreachable_or_a_wrong_api_path_is_slurmrest004(server: FakeSlurmrestd, token_file: Path) -> None:
    server.mode = "ctld-down"
    err = code_of(source(server.url, token_file).work)
    assert err.code == "SLURMREST004" and "HTTP 500" in str(err) and "Unspecified error" in str(err)
    err = code_of(source(server.url + "/api", token_file).idle_nodes)
    assert err.code == "SLURMREST004" and "HTTP 404" in str(err) and "openapi/v0.0.38" in err.fix


def test_a_timeout_outside_the_bound_is_refused_at_construction(token_file: Path) -> None:
    with pytest.raises(ValueError, match="must be in"):
        SlurmRestSource("http://x", "sco", str(token_file), timeout_s=600)
