"""Event attributes the savings attribution reads (ADR-26). Standard library only.

Producers (controller, agent, simulated region) put these keys in ``Event.attributes``; the analytics
(``orchestration``) read them back from ClickHouse. Absent keys take the defaults below.

- on ``launched``: ``purpose`` — one of ``PURPOSES`` (default ``work``); ``depth_premium_eur_h`` — what
  preferring depth over price costs per hour for this instance (ADR-08, default 0);
- ``wasted_s`` — seconds of the *instance's* work lost since the last good checkpoint (default 0), on any
  non-drill event of a workload; carried today by the agent's ``drained`` and ``overrun`` events (agent/drain/waste.py,
  ADR-20: computed per unit from its start time, the contract's checkpoint mode and cadence and the drain's
  outcome, then summed and divided by the number of units on the node — the units share the instance, so
  the figure is instance-seconds, valued at the pool's guaranteed rate), and meant for ``lost``,
  ``no-notice-loss``, ``terminated`` and ``checkpoint-failed`` too. Beside it on drain events:
  ``wasted_units`` (units counted: those with a start time) and ``wasted_units_no_start`` (units without one,
  which count nothing);
- a loss whose ``cause`` starts with ``DEFECT_CAUSE_PREFIX`` was caused by the workload itself: reported to
  the workload, not charged to reclaim;
- the controller's ``lost`` event of an instance that vanished without a notice (cause ``NO_NOTICE_LOSS_CAUSE``)
  carries ``wasted_s`` from the instance's launch time and the contract's checkpoint interval
  (``lost_work_s``, the same rule the agent applies per unit);
- the agent's ``advisory-lapsed`` event (cause ``FALSE_POSITIVE_CAUSE``, ADR-16) carries ``wasted_s``: the
  instance-seconds the opted-in workload's share of the node stood drained and cordoned by an advisory that
  no reclaim followed. The ledger charges it to that workload as a false-positive cost.
"""

from __future__ import annotations

__all__ = ["ADVISORY_LAPSE_S", "ATTR_DEPTH_PREMIUM", "ATTR_PURPOSE", "ATTR_WASTED_NO_START", "ATTR_WASTED_S",
           "ATTR_WASTED_UNITS", "DEFECT_CAUSE_PREFIX", "FALSE_POSITIVE_CAUSE", "FINAL_MODES", "MODE_NONE",
           "NO_NOTICE_LOSS_CAUSE", "PURPOSES", "RECLAIM_CAUSES", "REQUEUE_FRAMEWORK", "lost_work_s"]

ATTR_PURPOSE = "purpose"
ATTR_DEPTH_PREMIUM = "depth_premium_eur_h"
ATTR_WASTED_S = "wasted_s"
ATTR_WASTED_UNITS = "wasted_units"
ATTR_WASTED_NO_START = "wasted_units_no_start"
PURPOSES = ("work", "floor", "fallback", "headroom")
DEFECT_CAUSE_PREFIX = "workload-defect"
# causes of a provider-side reclaim (a notice, or a termination that came without one)
RECLAIM_CAUSES = ("reclaimed", "reclaimed-no-notice", "hall-reclaim", "hall-reclaim-no-notice")
# the agent's false-positive advisory charge (ADR-16) and the controller's no-notice loss
FALSE_POSITIVE_CAUSE = "advisory-false-positive"
NO_NOTICE_LOSS_CAUSE = "reclaimed-no-notice"
# an advisory lapses when no hard notice came this long after its expected time (the window the advisory
# precision analytics count a reclaim as "followed", orchestration.insights.ADVISORY_HORIZON_MIN)
ADVISORY_LAPSE_S = 1800

MODE_NONE = "none"  # contracts.schema.CheckpointMode values (the agent does not import pydantic models)
FINAL_MODES = ("final-on-notice+periodic", "framework")  # modes that write a final checkpoint on the signal
REQUEUE_FRAMEWORK = "slurm-requeue"  # contracts.schema.Framework.SLURM_REQUEUE: restarts from the unit's start


def lost_work_s(elapsed_s: float, *, checkpoint_mode: str, framework: str | None, interval_min: int | None,
                max_unit_length_min: int | None, final_written: bool) -> float:
    """Seconds of work lost ``elapsed_s`` after the work started (negative: clock skew, taken as 0) (ADR-20).

    Final checkpoint written (a final-writing mode) → 0; periodic → elapsed mod interval (the checkpoint
    client writes on a fixed cadence from the start); requeue (``slurm-requeue``, or no checkpoint with a unit
    length) → elapsed since the start, capped at the unit length; stateless (no checkpoint, no unit length)
    → 0; a checkpointing mode with no interval → elapsed since the start.
    """
    elapsed = max(0.0, elapsed_s)
    cap = None if max_unit_length_min is None else max_unit_length_min * 60.0
    since_start = elapsed if cap is None else min(elapsed, cap)
    if framework == REQUEUE_FRAMEWORK:
        return since_start
    if checkpoint_mode == MODE_NONE:
        return since_start if cap is not None else 0.0  # requeue within a unit length, or stateless
    if final_written and checkpoint_mode in FINAL_MODES:
        return 0.0
    if interval_min:
        return elapsed % (interval_min * 60.0)
    return since_start
