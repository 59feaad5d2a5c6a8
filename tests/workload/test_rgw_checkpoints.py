"""The checkpoint client against the real Ceph RGW test bed (ADR-18/19): multipart with SSE, manifest written
last (a writer killed by SIGKILL mid-upload leaves the previous generation as the one restored), retention,
the lifecycle rule, and isolation between workloads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from testkit.paths import REPO
from workload.checkpoint import AccessDenied, CheckpointClient, Encryption, S3Store

from .helpers import identity_client, workload_env

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("ceph-bed")]
MiB = 1024 * 1024


def test_a_generation_is_written_as_encrypted_multipart_parts_and_restored_byte_for_byte(
        client_a: CheckpointClient, rgw: dict[str, Any], tmp_path: Path) -> None:
    state = os.urandom(12 * MiB + 123)
    parts: list[tuple[str, int]] = []
    result = client_a.write({"model.bin": state, "meta/step.txt": b"42"}, step=42,
                            on_part=lambda name, n: parts.append((name, n)))
    assert result.generation.number == 1
    assert sorted(n for name, n in parts if name == "model.bin") == [1, 2, 3]  # 5 + 5 + 2 MiB parts
    s3 = identity_client(rgw, "workload-a")
    head = s3.head_object(Bucket=client_a.bucket, Key=client_a.data_prefix(1) + "model.bin")
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"] == rgw["identities"]["workload-a"]["kms_key_id"]
    manifest = s3.head_object(Bucket=client_a.bucket, Key=client_a.manifest_key(1))
    assert manifest["ServerSideEncryption"] == "aws:kms"
    gen = client_a.restore(tmp_path / "restored")
    assert gen is not None and gen.step == 42
    assert (tmp_path / "restored" / "model.bin").read_bytes() == state
    assert (tmp_path / "restored" / "meta" / "step.txt").read_bytes() == b"42"


def test_an_sse_c_checkpoint_cannot_be_read_without_the_workloads_key(
        rgw: dict[str, Any], bucket_a: str, tmp_path: Path) -> None:
    key = os.urandom(32)
    client = CheckpointClient(S3Store(identity_client(rgw, "workload-a")), bucket_a, "workload-a",
                              Encryption(customer_key=key), part_size=5 * MiB)
    client.ensure_bucket()
    state = os.urandom(6 * MiB)
    client.write({"state": state}, step=1)
    s3 = identity_client(rgw, "workload-a")
    with pytest.raises(ClientError):  # the bucket owner without the key gets nothing
        s3.get_object(Bucket=bucket_a, Key=client.data_prefix(1) + "state")
    other = CheckpointClient(client.store, bucket_a, "workload-a", Encryption(customer_key=os.urandom(32)))
    with pytest.raises(AccessDenied):  # the manifest itself is encrypted with the key
        other.latest()
    gen = client.restore(tmp_path)
    assert gen is not None and (tmp_path / "state").read_bytes() == state


def test_a_writer_killed_with_sigkill_mid_upload_leaves_the_previous_generation_to_restore(
        client_a: CheckpointClient, rgw: dict[str, Any], tmp_path: Path) -> None:
    first = os.urandom(6 * MiB)
    client_a.write({"state.bin": first}, step=100)
    src = tmp_path / "gen2"
    src.mkdir()
    (src / "state.bin").write_bytes(os.urandom(120 * MiB))
    writer = subprocess.Popen(
        [sys.executable, "-m", "workload.checkpoint", "--part-mib", "5", "--concurrency", "1", "write", str(src),
         "--step", "200"],
        env=workload_env(rgw, "workload-a", client_a.bucket), cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        line = writer.stdout.readline()
        assert line.startswith("part state.bin"), line  # at least one part is in RGW
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(timeout=10) == -signal.SIGKILL
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    s3 = identity_client(rgw, "workload-a")
    uploads = s3.list_multipart_uploads(Bucket=client_a.bucket).get("Uploads", [])
    assert [u["Key"] for u in uploads] == [client_a.data_prefix(2) + "state.bin"]  # killed mid-upload
    assert client_a.manifests() == [1]
    gen = client_a.restore(tmp_path / "restored")
    assert gen is not None and gen.number == 1 and gen.step == 100
    assert (tmp_path / "restored" / "state.bin").read_bytes() == first
    # The requeued unit (a new process) skips the orphan's number and cleans it up.
    successor = CheckpointClient(client_a.store, client_a.bucket, "workload-a", client_a.enc, part_size=5 * MiB)
    result = successor.write({"state.bin": b"third"}, step=300)
    assert result.generation.number == 3 and 2 in result.pruned
    assert s3.list_multipart_uploads(Bucket=client_a.bucket).get("Uploads", []) == []
    latest = successor.latest()
    assert latest is not None and latest.step == 300


def test_at_most_three_generations_are_kept(client_a: CheckpointClient) -> None:
    for step in range(1, 6):
        client_a.write({"s": f"step {step}".encode()}, step=step)
    gens = client_a.generations()
    assert [g.step for g in gens] == [5, 4, 3]
    keys = [i.key for i in client_a.store.list_objects(client_a.bucket, client_a.prefix)]
    assert not any("/0000000001" in k or "/0000000002" in k for k in keys), keys


def test_the_lifecycle_rule_expires_after_seven_days_and_aborts_orphaned_uploads(
        client_a: CheckpointClient, rgw: dict[str, Any]) -> None:
    s3 = identity_client(rgw, "workload-a")
    rules = s3.get_bucket_lifecycle_configuration(Bucket=client_a.bucket)["Rules"]
    assert len(rules) == 1
    rule = rules[0]
    assert rule["Status"] == "Enabled"
    assert rule["Expiration"] == {"Days": 7}
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rule.get("Filter", {}).get("Prefix", rule.get("Prefix")) == "checkpoints/"


def test_neither_a_second_workload_nor_the_orchestrator_can_read_the_first_workloads_bucket(
        client_a: CheckpointClient, rgw: dict[str, Any]) -> None:
    client_a.write({"secret": b"workload-a state"}, step=1)
    key = client_a.data_prefix(1) + "secret"
    for who in ("workload-b", "orchestrator"):
        s3 = identity_client(rgw, who)
        for call in (lambda: s3.get_object(Bucket=client_a.bucket, Key=key),  # noqa: B023
                     lambda: s3.list_objects_v2(Bucket=client_a.bucket),  # noqa: B023
                     lambda: s3.put_object(Bucket=client_a.bucket, Key="x", Body=b"x")):  # noqa: B023
            with pytest.raises(ClientError) as err:
                call()
            assert err.value.response["Error"]["Code"] == "AccessDenied", (who, err.value.response)
        thief = CheckpointClient(S3Store(s3), client_a.bucket, "workload-a",
                                 Encryption(kms_key_id=rgw["identities"][who].get("kms_key_id", "sco-workload-a")))
        with pytest.raises(AccessDenied):
            thief.latest()


def test_restore_with_no_checkpoint_returns_nothing_quickly(client_a: CheckpointClient, tmp_path: Path) -> None:
    t0 = time.monotonic()
    assert client_a.restore(tmp_path) is None
    assert time.monotonic() - t0 < 5


def test_a_final_write_the_store_refuses_releases_the_lease_and_reports_to_the_agent_socket(
        client_a: CheckpointClient, rgw: dict[str, Any], tmp_path: Path) -> None:
    import socket
    import threading

    from workload.checkpoint import AgentReporter, Checkpointer, FinalWriteFailed, NoticeListener

    agent_path = tmp_path / "agent.sock"  # the node agent's side: collect the JSON lines
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(agent_path))
    server.listen(8)
    lines: list[dict[str, Any]] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = b"".join(iter(lambda: conn.recv(4096), b""))  # noqa: B023
                lines.extend(json.loads(x) for x in data.decode().splitlines() if x)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    # workload-b's identity writing into workload-a's bucket: RGW refuses, as it would a revoked credential
    wrong = CheckpointClient(S3Store(identity_client(rgw, "workload-b")), client_a.bucket, "workload-a",
                             client_a.enc)
    listener = NoticeListener(default_budget_s=110)
    ck = Checkpointer(wrong, interval_s=3600, listener=listener,
                      reporter=AgentReporter("workload-a", agent_path, unit="job-42"))
    listener.deliver("signal:SIGUSR1")
    try:
        with pytest.raises(FinalWriteFailed, match="lease was released"):
            ck.maybe_checkpoint(9, lambda: {"state": b"x" * 1024})
        deadline = time.monotonic() + 5
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.close()
    kinds = [(x["kind"], x.get("final"), x.get("outcome")) for x in lines]
    assert ("checkpoint-failed", True, None) in kinds
    assert ("lease-released", None, "checkpoint-failed") in kinds
    assert all(x["unit"] == "job-42" and x["workload"] == "workload-a" for x in lines)
    assert client_a.latest() is None
