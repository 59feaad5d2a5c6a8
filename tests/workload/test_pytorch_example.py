"""The PyTorch example (workload/checkpoint/examples/pytorch_train.py) against the real RGW test bed: killed by a
notice it writes a final DCP checkpoint within the contract's drain budget (measured) and resumes at the next
step; killed with no notice (SIGKILL) it loses no more than one checkpoint interval; either way the resumed
run ends with exactly the weights of an uninterrupted one."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
import yaml

from testkit.paths import REPO

from .helpers import empty_bucket, identity_client, workload_env

# torch is looked for, not imported: the example imports it in its own process, and importing it here cost every
# collection of the suite (the fast tier's included) about 5 s
pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("ceph-bed"),
              pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed (extra ml)")]
CONTRACT = yaml.safe_load((REPO / "deploy" / "contracts" / "workloads" / "pytorch-llm-finetune.yaml").read_text())
BUDGET_S = float(CONTRACT["drain_budget_s"])
STEPS = 120
INTERVAL_S = 1.0


class Trainer:
    def __init__(self, rgw: dict[str, Any], bucket: str) -> None:
        env = {**workload_env(rgw, "workload-a", bucket), "SCO_CHECKPOINT_INTERVAL_S": str(INTERVAL_S),
               "SCO_DRAIN_BUDGET_S": str(BUDGET_S), "SCO_DRAIN_SIGNAL": CONTRACT["drain_signal"],
               "PYTHONWARNINGS": "ignore"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workload.checkpoint.examples.pytorch_train", "--steps", str(STEPS),
             "--step-seconds", "0.02"], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self.events: list[dict[str, Any]] = []

    def next_event(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            return None
        event: dict[str, Any] = json.loads(line)
        self.events.append(event)
        return event

    def until(self, predicate: Any) -> dict[str, Any]:
        while (event := self.next_event()) is not None:
            if predicate(event):
                return event
        raise AssertionError(f"the trainer ended first: {self.events[-3:]}")

    def finish(self, timeout: float = 120) -> int:
        while self.next_event() is not None:
            pass
        code = self.proc.wait(timeout=timeout)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def buckets(rgw: dict[str, Any]) -> Any:
    names: list[str] = []

    def make() -> str:
        names.append(f"sco-test-torch-{uuid.uuid4().hex[:10]}")
        return names[-1]

    yield make
    for name in names:
        empty_bucket(identity_client(rgw, "workload-a"), name)


def _reference_digest(rgw: dict[str, Any], bucket: str) -> str:
    ref = Trainer(rgw, bucket)
    try:
        assert ref.until(lambda e: e["event"] == "resumed")["step"] == 1
        done = ref.until(lambda e: e["event"] == "done")
        assert ref.finish() == 0
        return str(done["digest"])
    finally:
        ref.kill()


def test_a_notice_gives_a_final_checkpoint_within_the_drain_budget_and_the_run_resumes_at_the_next_step(
        rgw: dict[str, Any], buckets: Any) -> None:
    reference = _reference_digest(rgw, buckets())
    bucket = buckets()
    first = Trainer(rgw, bucket)
    try:
        first.until(lambda e: e["event"] == "checkpoint" and e["kind"] == "periodic")
        first.until(lambda e: e["event"] == "step" and e["step"] >= 70)
        noticed = time.monotonic()
        first.proc.send_signal(getattr(signal, CONTRACT["drain_signal"]))
        final = first.until(lambda e: e["event"] == "checkpoint" and e["kind"] == "final")
        assert first.finish() == 0
        drained_s = time.monotonic() - noticed
    finally:
        first.kill()
    print(f"final DCP write {final['bytes']} B in {final['write_s']} s; notice to exit {drained_s:.3f} s "
          f"of a {BUDGET_S:.0f} s drain budget")
    assert final["since_notice_s"] < BUDGET_S and drained_s < BUDGET_S
    assert final["step"] >= 70
    second = Trainer(rgw, bucket)
    try:
        resumed = second.until(lambda e: e["event"] == "resumed")
        assert resumed["step"] == final["step"] + 1  # no step lost
        done = second.until(lambda e: e["event"] == "done")
        assert second.finish() == 0
    finally:
        second.kill()
    assert done["digest"] == reference


def test_without_a_notice_the_loss_is_bounded_by_the_checkpoint_interval(rgw: dict[str, Any], buckets: Any) -> None:
    bucket = buckets()
    first = Trainer(rgw, bucket)
    try:
        first.until(lambda e: e["event"] == "checkpoint" and e["kind"] == "periodic")
        last = first.until(lambda e: e["event"] == "step" and e["step"] >= 80)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
    finally:
        first.kill()
    periodic = [e for e in first.events if e["event"] == "checkpoint"]
    step_time = {e["step"]: e["t"] for e in first.events if e["event"] == "step"}
    second = Trainer(rgw, bucket)
    try:
        resumed = second.until(lambda e: e["event"] == "resumed")
        assert resumed["step"] >= periodic[-1]["step"] + 1  # at least the last announced periodic checkpoint
        lost_steps = last["step"] - (resumed["step"] - 1)
        lost_s = last["t"] - step_time[resumed["step"] - 1]  # work done after the restored step, lower bound
        print(f"killed at step >= {last['step']}, resumed at {resumed['step']}: {lost_steps} step(s), "
              f"{lost_s:.2f} s of work lost; interval {INTERVAL_S} s")
        assert lost_steps >= 0
        assert lost_s <= INTERVAL_S + max(e["write_s"] for e in periodic) + 0.5
        assert second.finish() == 0
    finally:
        second.kill()
