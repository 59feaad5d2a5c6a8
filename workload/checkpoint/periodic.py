"""Periodic checkpoints at the compiler-derived interval plus the final checkpoint on a notice (ADR-20).

:class:`Checkpointer` is what a training or batch loop calls between steps::

    ck = Checkpointer(client, interval_s=interval_from_env(), listener=listener, reporter=reporter)
    for step in range(start, total):
        train_one_step()
        if ck.maybe_checkpoint(step, lambda: state_files(step)) == "final":
            sys.exit(0)            # the final write is done (or reported failed); leave before the deadline

The interval comes from the compiled contract (``checkpoint_interval_min`` in the agent bundle, the
Young–Daly interval capped at 60 min), never from a habit.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .client import CheckpointClient, Source, WriteResult
from .errors import CheckpointError, FinalWriteFailed
from .notice import NoticeListener
from .report import CHECKPOINT_FAILED, CHECKPOINT_WRITTEN, Reporter

__all__ = ["Checkpointer", "interval_from_agent_bundle", "interval_from_env"]


def interval_from_agent_bundle(path: Path, workload: str, version: int | None = None) -> float:
    """Seconds between periodic checkpoints for ``workload`` from the agent bundle on the node.

    The node agent already verified it (``<cache>/agent-bundle.json``). Raises with the fix when the workload is not in
    it.
    """
    payload = json.loads(path.read_text(encoding="utf-8"))
    for ref, entry in payload.get("workloads", {}).items():
        if entry.get("workload") == workload and (version is None or int(entry.get("version", 0)) == version):
            minutes = entry.get("checkpoint_interval_min")
            if minutes is None:
                raise CheckpointError(f"{ref} declares no periodic checkpoint (checkpoint_interval_min is null)")
            return float(minutes) * 60.0
    raise CheckpointError(f"workload {workload!r} is not in {path}; check --comment/label and the bundle partition")


def interval_from_env(default_s: float = 3600.0) -> float:
    """``SCO_CHECKPOINT_INTERVAL_S`` (set by the launcher from the bundle) or the 60-minute cap."""
    raw = os.environ.get("SCO_CHECKPOINT_INTERVAL_S")
    if raw is None:
        return default_s
    value = float(raw)
    if value <= 0:
        raise CheckpointError(f"SCO_CHECKPOINT_INTERVAL_S={raw!r} must be a positive number of seconds")
    return value


class Checkpointer:
    """Periodic checkpoints at the compiled interval, and the final one on a notice."""

    def __init__(self, client: CheckpointClient, *, interval_s: float, listener: NoticeListener | None,
                 reporter: Reporter, monotonic: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self.client, self.interval_s, self.listener, self.reporter = client, interval_s, listener, reporter
        self.monotonic = monotonic
        self.last = monotonic()
        self.final_done = False
        self.history: list[tuple[str, WriteResult]] = []

    def periodic_due(self) -> bool:
        """True once the interval has passed since the last checkpoint."""
        return self.monotonic() - self.last >= self.interval_s

    @property
    def notified(self) -> bool:
        """True once a reclaim notice has arrived."""
        return self.listener is not None and self.listener.notice is not None

    def maybe_checkpoint(self, step: int, produce: Callable[[], Mapping[str, Source]],
                         metadata: Mapping[str, object] | None = None) -> str | None:
        """``"final"`` after the final write on a notice, ``"periodic"`` after a periodic one, else None.

        On ``"final"`` the caller must stop. A failed periodic write is reported and training continues.
        """
        if self.notified and not self.final_done:
            self.final(step, produce, metadata)
            return "final"
        if self.periodic_due():
            try:
                self._write("periodic", step, produce, metadata)
            except CheckpointError as exc:
                self.reporter.report(CHECKPOINT_FAILED, final=False, step=step, error=str(exc))
                self.last = self.monotonic()  # retry at the next interval, not every step
                return None
            return "periodic"
        return None

    def final(self, step: int, produce: Callable[[], Mapping[str, Source]],
              metadata: Mapping[str, object] | None = None) -> WriteResult:
        """The final write on a notice.

        On failure the lease is released and the failure reported, then
        :class:`FinalWriteFailed` is raised: the unit resumes from the previous generation.
        """
        self.final_done = True
        notice = self.listener.notice if self.listener is not None else None
        try:
            result = self._write("final", step, produce, metadata)
        except Exception as exc:
            detail = f"final checkpoint at step {step} failed: {exc}"
            self.reporter.report(CHECKPOINT_FAILED, final=True, step=step, error=str(exc))
            self.reporter.release_lease("checkpoint-failed", detail)
            raise FinalWriteFailed(detail + "; the lease was released and the previous generation will be "
                                   "restored") from exc
        remaining = None if notice is None else round(notice.remaining_s(self.monotonic()), 3)
        self.reporter.release_lease("checkpoint-written", f"generation {result.generation.number} at step {step}"
                                    f"{'' if remaining is None else f', {remaining}s of the budget left'}")
        try:  # retention after the lease is released: it is not on the drain's critical path
            self.client.prune(current=result.generation.number)
        except CheckpointError as exc:
            self.reporter.report("checkpoint-prune-failed", error=str(exc))
        return result

    def _write(self, kind: str, step: int, produce: Callable[[], Mapping[str, Source]],
               metadata: Mapping[str, object] | None) -> WriteResult:
        started = self.monotonic()
        result = self.client.write(produce(), step=step, metadata={"kind": kind, **(metadata or {})},
                                   prune=kind != "final")
        seconds = self.monotonic() - started
        self.last = started  # the cadence is start to start: an interval of work between checkpoints
        self.history.append((kind, result))
        self.reporter.report(CHECKPOINT_WRITTEN, final=kind == "final", step=step,
                             generation=result.generation.number, bytes=result.generation.size,
                             seconds=round(seconds, 3))
        return result
