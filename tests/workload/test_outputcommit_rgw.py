"""Output commit against the real Ceph RGW test bed (ADR-21): a unit killed while writing its output leaves
nothing visible; its next attempt publishes the whole result; attempts are counted in the ledger."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from typing import Any

import pytest

from testkit.paths import REPO
from workload.checkpoint import Encryption, S3Store
from workload.outputcommit import OutputCommitter, RecordingNotifier, RecordingPublisher, UnitOwner

from .helpers import identity_client

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("ceph-bed")]

UNIT_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    from datetime import UTC, datetime
    from workload.checkpoint import Encryption, S3Store, s3_client
    from workload.outputcommit import OutputCommitter, RecordingNotifier, RecordingPublisher, UnitOwner
    cfg = json.loads(sys.argv[1])
    s3 = s3_client(cfg["endpoint"], cfg["access_key"], cfg["secret_key"])
    oc = OutputCommitter(S3Store(s3), cfg["bucket"], Encryption(kms_key_id=cfg["kms"]),
                         UnitOwner("workload-a", "3", "owner@example.org", "r1", "r1/slurm-hpc"),
                         publisher=RecordingPublisher(), notifier=RecordingNotifier(),
                         clock=lambda: datetime.now(UTC))
    attempt = oc.begin(cfg["unit"])
    for i in range(cfg["outputs"]):
        oc.stage(attempt, f"part-{i:03d}.csv", os.urandom(256 * 1024))
        print(f"staged {i}", flush=True)
        time.sleep(cfg["pause"])
    oc.commit(attempt)
    print("committed", flush=True)
""")


def _committer(rgw: dict[str, Any], bucket: str) -> OutputCommitter:
    store = S3Store(identity_client(rgw, "workload-a"))
    store.ensure_bucket(bucket)
    return OutputCommitter(store, bucket, Encryption(kms_key_id=rgw["identities"]["workload-a"]["kms_key_id"]),
                           UnitOwner("workload-a", "3", "owner@example.org", "r1", "r1/slurm-hpc"),
                           publisher=RecordingPublisher(), notifier=RecordingNotifier(),
                           clock=lambda: datetime.now(UTC))


def _run_unit(rgw: dict[str, Any], bucket: str, unit: str, outputs: int, pause: float,
              kill_after: int | None) -> int:
    ident = rgw["identities"]["workload-a"]
    cfg = {"endpoint": rgw["endpoint"], "access_key": ident["access_key"], "secret_key": ident["secret_key"],
           "kms": ident["kms_key_id"], "bucket": bucket, "unit": unit, "outputs": outputs, "pause": pause}
    proc = subprocess.Popen([sys.executable, "-c", UNIT_SCRIPT, json.dumps(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        if kill_after is not None:
            for _ in range(kill_after):
                assert proc.stdout.readline().startswith("staged")
            proc.send_signal(signal.SIGKILL)
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_a_unit_killed_mid_write_leaves_no_partial_result_and_the_next_attempt_publishes_it_whole(
        rgw: dict[str, Any], bucket_a: str) -> None:
    oc = _committer(rgw, bucket_a)
    assert _run_unit(rgw, bucket_a, "day-2026-11-29", outputs=6, pause=0.3, kill_after=3) == -signal.SIGKILL
    staged = oc.store.list_objects(bucket_a, "staging/day-2026-11-29/")
    assert len(staged) >= 3  # the interrupted attempt did write ...
    assert oc.published("day-2026-11-29") is None  # ... but nothing is visible
    assert oc.store.list_objects(bucket_a, oc.output_prefix("day-2026-11-29")) == []
    assert _run_unit(rgw, bucket_a, "day-2026-11-29", outputs=6, pause=0.0, kill_after=None) == 0
    pub = oc.published("day-2026-11-29")
    assert pub is not None and pub.attempt == 2 and len(pub.names) == 6
    assert len(oc.read("day-2026-11-29", "part-005.csv")) == 256 * 1024
    assert oc.reclaim_ended("day-2026-11-29") == 1  # the killed attempt counts as ended by reclaim
    head = identity_client(rgw, "workload-a").head_object(Bucket=bucket_a, Key="output/day-2026-11-29/part-000.csv")
    assert head["ServerSideEncryption"] == "aws:kms"


def test_a_republish_hides_the_old_output_until_the_new_one_is_complete(rgw: dict[str, Any], bucket_a: str) -> None:
    oc = _committer(rgw, bucket_a)
    a1 = oc.begin("u1")
    oc.stage(a1, "a.csv", b"old-a")
    oc.stage(a1, "b.csv", b"old-b")
    oc.commit(a1)
    a2 = oc.begin("u1")
    oc.stage(a2, "a.csv", b"new-a")
    oc.commit(a2)
    pub = oc.published("u1")
    assert pub is not None and pub.names == ("a.csv",) and oc.read("u1", "a.csv") == b"new-a"
    assert [i.key for i in oc.store.list_objects(bucket_a, "output/u1/")] == ["output/u1/_SUCCESS", "output/u1/a.csv"]
    assert oc.store.list_objects(bucket_a, "staging/u1/") == []
