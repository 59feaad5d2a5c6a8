"""The checkpoint client's logic on the in-memory store double: manifest-last restore, retention by count and
age, notices by signal and socket, periodic interval, and the failed final write that releases the lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from testkit.paths import REPO
from workload.checkpoint import (
    CheckpointClient,
    Checkpointer,
    CheckpointError,
    Encryption,
    FinalWriteFailed,
    MemoryStore,
    NoticeListener,
    RecordingReporter,
    interval_from_agent_bundle,
    send_notice,
)

MiB = 1024 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _client(store: MemoryStore | None = None, clock: Clock | None = None) -> CheckpointClient:
    store = store or MemoryStore()
    c = CheckpointClient(store, "bkt", "w", Encryption(kms_key_id="k"), part_size=5 * MiB, clock=clock or Clock())
    c.ensure_bucket()
    return c


def test_a_generation_without_its_manifest_is_ignored_by_restore(tmp_path: Path) -> None:
    c = _client()
    c.write({"s": b"one"}, step=1)
    store = c.store
    assert isinstance(store, MemoryStore)
    store.put("bkt", c.data_prefix(2) + "s", b"two", c.enc)  # a killed writer's gen 2: objects, no manifest
    assert _client(store).next_number() == 3  # the restarted writer skips the orphan's number
    gen = c.restore(tmp_path)
    assert gen is not None and gen.step == 1 and (tmp_path / "s").read_bytes() == b"one"


def test_a_manifest_whose_object_is_missing_does_not_count_as_complete() -> None:
    c = _client()
    c.write({"s": b"one"}, step=1)
    c.write({"s": b"two"}, step=2)
    c.store.delete("bkt", [c.data_prefix(2) + "s"])
    latest = c.latest()
    assert latest is not None and latest.step == 1


def test_generations_older_than_seven_days_are_pruned() -> None:
    clock = Clock()
    c = _client(clock=clock)
    c.write({"s": b"old"}, step=1)
    clock.now += timedelta(days=8)
    result = c.write({"s": b"new"}, step=2)
    assert result.pruned == (1,)
    assert [g.step for g in c.generations()] == [2]


def test_the_lifecycle_rule_is_merged_with_other_prefixes_rules() -> None:
    c = _client()
    store = c.store
    assert isinstance(store, MemoryStore)
    store.put_lifecycle("bkt", [{"ID": "someone-else", "Status": "Enabled"}, *store.get_lifecycle("bkt")])
    c.install_lifecycle()
    assert [r["ID"] for r in store.get_lifecycle("bkt")] == ["someone-else", "sco-retention-checkpoints"]


def test_a_failed_final_write_releases_the_lease_and_is_reported_not_lost() -> None:
    store = MemoryStore()
    c = _client(store)
    listener = NoticeListener(default_budget_s=110)
    reporter = RecordingReporter()
    ck = Checkpointer(c, interval_s=3600, listener=listener, reporter=reporter)
    listener.deliver("socket")
    store.fail_puts.add(c.manifest_key(1))
    with pytest.raises(FinalWriteFailed, match="lease was released"):
        ck.maybe_checkpoint(7, lambda: {"s": b"state"})
    assert reporter.released and reporter.released[0][0] == "checkpoint-failed"
    assert any(r["kind"] == "checkpoint-failed" and r["final"] for r in reporter.records)
    assert c.latest() is None


def test_periodic_checkpoints_follow_the_interval_and_a_notice_forces_the_final_one() -> None:
    t = [0.0]
    c = _client()
    listener = NoticeListener(default_budget_s=110, monotonic=lambda: t[0])
    reporter = RecordingReporter()
    ck = Checkpointer(c, interval_s=600, listener=listener, reporter=reporter, monotonic=lambda: t[0])
    kinds = []
    for step in range(1, 31):
        t[0] += 60  # one step a minute
        if step == 25:
            listener.deliver("signal:SIGUSR1")
        kinds.append((step, ck.maybe_checkpoint(step, lambda s=step: {"s": str(s).encode()})))  # type: ignore[misc]
        if kinds[-1][1] == "final":
            break
    assert [s for s, k in kinds if k == "periodic"] == [10, 20]
    assert kinds[-1] == (25, "final")
    assert reporter.released[0][0] == "checkpoint-written"


def test_a_notice_arrives_by_the_drain_signal() -> None:
    listener = NoticeListener(default_budget_s=60)
    listener.install_signal("SIGUSR1")
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        notice = listener.wait(2)
        assert notice is not None and notice.source == "signal:SIGUSR1" and notice.budget_s == 60
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)


def test_a_notice_arrives_on_the_local_socket_with_its_budget(tmp_path: Path) -> None:
    listener = NoticeListener(default_budget_s=60)
    path = tmp_path / "notice.sock"
    listener.serve_socket(path)
    try:
        assert send_notice(path, budget_s=45.0) is True
        notice = listener.wait(2)
        assert notice is not None and notice.source == "socket" and notice.budget_s == 45.0
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    finally:
        listener.close()


def test_the_interval_comes_from_the_compiled_agent_bundle(tmp_path: Path) -> None:
    from contracts.compiler import check_repo
    from sco.cli import main

    repo = REPO / "deploy" / "contracts"
    assert main(["keys", "init", "--dir", str(tmp_path / "keys")]) == 0
    assert main(["contracts", "compile", str(repo), "--out", str(tmp_path / "out"),
                 "--key", str(tmp_path / "keys" / "signing.key.pem"),
                 "--governance-key", str(tmp_path / "keys" / "governance.key.pem")]) == 0
    bundle = tmp_path / "out" / "r1" / "slurm-hpc" / "agent-bundle.json"
    derived = {w.contract.workload: w.interval_min for w in check_repo(repo, None, None).workloads}
    assert derived["genomics-align"] is not None
    assert interval_from_agent_bundle(bundle, "genomics-align", 5) == derived["genomics-align"] * 60.0
    with pytest.raises(CheckpointError, match="not in"):
        interval_from_agent_bundle(bundle, "genomics-align", 4)


def test_the_client_imports_without_the_rest_of_sco_or_pydantic() -> None:
    code = ("import sys, workload.checkpoint; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('pydantic', 'contracts', 'agent', 'controllers') or (m.startswith('sco.') and not "
            "m.startswith('workload.checkpoint'))]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # (no wall-clock limit: load would decide it)


def test_without_an_agent_listening_reports_go_to_the_spool_file(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from workload.checkpoint import AgentReporter

    spool = tmp_path / "reports.jsonl"
    reporter = AgentReporter("w", tmp_path / "no-agent.sock", spool=spool, unit="u1")
    reporter.report("checkpoint-failed", final=True, error="boom")
    reporter.release_lease("checkpoint-failed", "final checkpoint at step 3 failed")
    records = [json.loads(x) for x in spool.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["checkpoint-failed", "lease-released"]
    assert records[1]["outcome"] == "checkpoint-failed" and records[1]["unit"] == "u1"
    assert "lease-released" in capsys.readouterr().err  # and always in the job's log
