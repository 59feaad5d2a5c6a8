"""Work lost on one drain, in seconds (ADR-20): what the ledger charges as wasted hours. Pure, standard library.

Per unit, from the contract's drain fields the agent holds (the bundle's ``checkpoint_interval_min`` is the
declared interval or the compiler's derived one), the unit's run time at the notice (``started_at`` → notice
receipt) and the drain's outcome:

- **final checkpoint on notice** (``final-on-notice+periodic``, or ``framework`` other than ``slurm-requeue``)
  and the drain verified within budget → 0;
- **periodic, no final write** (those modes after an overrun or an unverified drain; ``periodic``) → elapsed
  mod interval: the checkpoint client writes on a fixed cadence from the unit's start (no interval held:
  lost as under requeue);
- **requeue** (``slurm-requeue``, or no checkpoint with a ``max_unit_length_min``) → elapsed since the start,
  capped at the unit length: the unit runs again from its beginning;
- **stateless** (no checkpoint, no unit length) → 0.

The outcome is the workload's ``remaining`` after verification: 0 is drained within budget (scheduler or
local path: the units got the checkpoint signal and left in time); > 0 is an overrun, and every unit of the
workload then counts as without a final write (verification counts the units left, it does not name them: an
upper bound); None (a local actuator that cannot count, e.g. kubelet shutdown) is unverified and counts as
an overrun.

``wasted_s`` is the *instance's* lost work: the sum of the units' lost seconds divided by the number of units
on the node at the notice (every workload's). The units share the instance and the ledger values
``wasted_s`` as instance time at the pool's guaranteed rate, so two units that each lose 10 min of a node
they share lose 10 instance-minutes, not 20. A unit without a (readable) start time contributes nothing; it
is counted in ``wasted_units_no_start``, the others in ``wasted_units``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from contracts.cost_attributes import (
    ATTR_WASTED_NO_START,
    ATTR_WASTED_S,
    ATTR_WASTED_UNITS,
    FINAL_MODES,
    MODE_NONE,
    REQUEUE_FRAMEWORK,
    lost_work_s,
)

from ..model import Contract, Unit

__all__ = ["FINAL_MODES", "MODE_NONE", "REQUEUE_FRAMEWORK", "Waste", "drain_waste", "unit_lost_s"]

def unit_lost_s(contract: Contract, elapsed_s: float, final_written: bool) -> float:
    """Seconds of one unit's work lost, ``elapsed_s`` after its start (``contracts.cost_attributes.lost_work_s``)."""
    return lost_work_s(elapsed_s, checkpoint_mode=contract.checkpoint_mode, framework=contract.framework,
                       interval_min=contract.checkpoint_interval_min,
                       max_unit_length_min=contract.max_unit_length_min, final_written=final_written)


@dataclass(frozen=True)
class Waste:
    """The work a workload's drain lost, and how many units counted."""

    wasted_s: int  # the instance's lost seconds (sum over units ÷ units on the node), rounded
    counted: int  # units with a start time
    no_start: int  # units without one (they count nothing)

    def attributes(self) -> dict[str, int]:
        """The event attributes: ``wasted_s``, ``wasted_units``, ``wasted_units_no_start``."""
        return {ATTR_WASTED_S: self.wasted_s, ATTR_WASTED_UNITS: self.counted, ATTR_WASTED_NO_START: self.no_start}


def drain_waste(contract: Contract, units: Sequence[Unit], node_units: int, notice_at: datetime,
                remaining: int | None) -> Waste:
    """The instance's work lost by one workload's drain.

    ``units``: the workload's units listed at the notice;
    ``node_units``: every unit on the node then (the divisor, never below ``len(units)``); ``notice_at``: the
    notice's receipt on the agent's clock; ``remaining``: units left after verification (None: cannot tell).
    """
    final_written = remaining == 0
    lost, counted = 0.0, 0
    for unit in units:
        start = unit.started_at()
        if start is None:
            continue
        counted += 1
        lost += unit_lost_s(contract, (notice_at - start).total_seconds(), final_written)
    divisor = max(node_units, len(units))
    return Waste(round(lost / divisor) if divisor else 0, counted, len(units) - counted)
