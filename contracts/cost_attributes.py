"""Event attributes the savings attribution reads (ADR-26). Standard library only.

Producers (controller, agent, simulated region) put these keys in ``Event.attributes``; the analytics
(``orchestration``) read them back from ClickHouse. Absent keys take the defaults below.

- on ``launched``: ``purpose`` — one of ``PURPOSES`` (default ``work``); ``depth_premium_eur_h`` — what
  preferring depth over price costs per hour for this instance (ADR-08, default 0);
- on ``lost``, ``no-notice-loss``, ``terminated``, ``checkpoint-failed``: ``wasted_s`` — seconds of work
  lost since the last good checkpoint (default 0);
- a loss whose ``cause`` starts with ``DEFECT_CAUSE_PREFIX`` was caused by the workload itself: reported to
  the workload, not charged to reclaim.
"""

from __future__ import annotations

__all__ = ["ATTR_DEPTH_PREMIUM", "ATTR_PURPOSE", "ATTR_WASTED_S", "DEFECT_CAUSE_PREFIX", "PURPOSES",
           "RECLAIM_CAUSES"]

ATTR_PURPOSE = "purpose"
ATTR_DEPTH_PREMIUM = "depth_premium_eur_h"
ATTR_WASTED_S = "wasted_s"
PURPOSES = ("work", "floor", "fallback", "headroom")
DEFECT_CAUSE_PREFIX = "workload-defect"
# causes of a provider-side reclaim (a notice, or a termination that came without one)
RECLAIM_CAUSES = ("reclaimed", "reclaimed-no-notice", "hall-reclaim", "hall-reclaim-no-notice")
