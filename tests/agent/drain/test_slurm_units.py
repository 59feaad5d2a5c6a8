"""The Slurm adapter's job listing, parsed without a cluster: state, start time and contract per job."""

from __future__ import annotations

from agent.drain.slurm import SlurmAdapter, start_from_epoch
from agent.model import STARTED_AT


def test_squeue_lines_give_each_job_its_state_start_time_and_contract() -> None:
    out = ("101|RUNNING|1795995910|contract=etl@1\n"
           "102|COMPLETING|N/A|contract=ml@2;team=x|y\n"
           "103|RUNNING|0|(null)\n")
    units = {u.unit_id: u for u in SlurmAdapter._parse_units(out)}
    assert units["101"].attributes == {"state": "RUNNING", STARTED_AT: "2026-11-29T23:45:10Z"}
    assert units["101"].contract_ref == "etl@1"
    assert units["102"].contract_ref == "ml@2" and STARTED_AT not in units["102"].attributes
    assert units["103"].contract_ref is None and units["103"].started_at() is None


def test_the_listing_asks_squeue_for_the_start_time_in_the_same_call_as_epoch_seconds() -> None:
    adapter = SlurmAdapter("node1")
    argv = adapter._units_argv()
    assert argv[:2] == ("squeue", "-h") and argv[-1] == "%i|%T|%S|%k"
    assert adapter.env["SLURM_TIME_FORMAT"] == "%s"
    assert start_from_epoch("Unknown") is None and start_from_epoch(" 60 ") == "1970-01-01T00:01:00Z"
    assert start_from_epoch("9" * 30) is None  # out of range: no start rather than an error


class _Recorded(SlurmAdapter):
    """The adapter with its commands recorded and ``sinfo`` answering a given state and reason."""

    def __init__(self, reason: str) -> None:
        super().__init__("node1")
        self.reason = reason
        self.ran: list[tuple[str, ...]] = []

    def _run(self, *argv: str) -> str:
        self.ran.append(argv)
        return f"drained|{self.reason}\n" if argv[0] == "sinfo" else ""


def test_a_lapsed_advisory_resumes_the_node_only_from_the_advisorys_own_drain() -> None:
    ours = _Recorded("sco advisory a-1")
    ours.mark_schedulable("sco advisory a-1 lapsed without a reclaim")
    assert ("scontrol", "update", "nodename=node1", "state=resume") in ours.ran
    for reason in ("sco reclaim notice n-1", "sco-agent: no valid contract bundle: x", "admin maintenance"):
        other = _Recorded(reason)
        other.mark_schedulable("sco advisory a-1 lapsed without a reclaim")
        assert [a for a in other.ran if a[0] == "scontrol"] == [], reason  # never undo another drain
