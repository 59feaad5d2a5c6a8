"""Losses without notice, charged (ADR-20, ADR-26), pure: an instance that vanished from the provider's listing
while the controller held it running — no notice seen — lost the work done since its last checkpoint. The
controller knows the instance's launch time and the contract's checkpoint interval, so it publishes the loss
as a ``lost`` event carrying ``wasted_s`` (``contracts.cost_attributes.lost_work_s``, the rule the agent
applies per unit, with no final write: there was no notice to write one on). The savings attribution reads
``wasted_s`` from any non-drill event of a workload and removes it from useful work.

Approximations, stated: the instance's work is taken to have started at its launch (boot and scheduling
time count as work, so the loss is an upper bound), and the loss is dated at the pass that saw the instance
gone (at most one pass interval after it went).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from contracts.cost_attributes import ATTR_WASTED_S, NO_NOTICE_LOSS_CAUSE, lost_work_s
from contracts.subjects import EventKind

from .decision import Desired
from .model import Gone, Note

__all__ = ["no_notice_losses"]


def no_notice_losses(gone: Iterable[Gone], desired: Desired, now: datetime) -> list[Note]:
    """A ``lost`` note, with ``wasted_s``, for each instance of a workload in force that went without notice."""
    notes = []
    for g in gone:
        contract = desired.contract(g.workload) if g.workload else None
        if not g.without_notice or contract is None or g.launched_at is None:
            continue
        elapsed = (now - g.launched_at).total_seconds()
        wasted = lost_work_s(elapsed, checkpoint_mode=str(contract.checkpoint_mode),
                             framework=None if contract.framework is None else str(contract.framework),
                             interval_min=contract.checkpoint_interval_min,
                             max_unit_length_min=contract.max_unit_length_min, final_written=False)
        notes.append(Note(str(EventKind.LOST), NO_NOTICE_LOSS_CAUSE, g.workload, g.pool, g.instance_id, {
            ATTR_WASTED_S: round(wasted), "launched_at": g.launched_at.isoformat(), "was": g.was,
            "checkpoint_interval_min": contract.checkpoint_interval_min}))
    return notes
