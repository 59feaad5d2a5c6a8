"""Event attributes the savings attribution reads (ADR-26). Standard library only.

Producers (controller, agent, simulated region) put these keys in ``Event.attributes``; the analytics
(``orchestration``) read them back from ClickHouse. Absent keys take the defaults below.

- on ``launched``: ``purpose`` — one of ``PURPOSES`` (default ``work``); ``depth_premium_eur_h`` — what
  preferring depth over price costs per hour for this instance (ADR-08, default 0);
- ``wasted_s`` — seconds of the *instance's* work lost since the last good checkpoint (default 0), on any
  non-drill event of a workload; carried today by the agent's ``drained`` and ``overrun`` events (agent/waste.py,
  ADR-20: computed per unit from its start time, the contract's checkpoint mode and cadence and the drain's
  outcome, then summed and divided by the number of units on the node — the units share the instance, so
  the figure is instance-seconds, valued at the pool's guaranteed rate), and meant for ``lost``,
  ``no-notice-loss``, ``terminated`` and ``checkpoint-failed`` too. Beside it on drain events:
  ``wasted_units`` (units counted: those with a start time) and ``wasted_units_no_start`` (units without one,
  which count nothing);
- a loss whose ``cause`` starts with ``DEFECT_CAUSE_PREFIX`` was caused by the workload itself: reported to
  the workload, not charged to reclaim.
"""

from __future__ import annotations

__all__ = ["ATTR_DEPTH_PREMIUM", "ATTR_PURPOSE", "ATTR_WASTED_NO_START", "ATTR_WASTED_S", "ATTR_WASTED_UNITS",
           "DEFECT_CAUSE_PREFIX", "PURPOSES", "RECLAIM_CAUSES"]

ATTR_PURPOSE = "purpose"
ATTR_DEPTH_PREMIUM = "depth_premium_eur_h"
ATTR_WASTED_S = "wasted_s"
ATTR_WASTED_UNITS = "wasted_units"
ATTR_WASTED_NO_START = "wasted_units_no_start"
PURPOSES = ("work", "floor", "fallback", "headroom")
DEFECT_CAUSE_PREFIX = "workload-defect"
# causes of a provider-side reclaim (a notice, or a termination that came without one)
RECLAIM_CAUSES = ("reclaimed", "reclaimed-no-notice", "hall-reclaim", "hall-reclaim-no-notice")
