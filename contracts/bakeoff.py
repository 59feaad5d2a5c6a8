"""One strategy-month of the placement bake-off, as ``sco bakeoff run`` measures it and ClickHouse stores it.

One seed × strategy through the production controller; the Dagster ``strategy_month`` asset stores it in
ClickHouse (``strategy_months``) for the dbt comparison model to read. One record, written by one component and
read by another.

Percentages are of the run's own totals: interruptions per 100 instance-hours; wasted work of reclaimable
unit-hours; shortfall of the unit-hours wanted; net saving of the useful work's guaranteed value (at the replay's
rate card, and at the planning rates the one-pager's targets are stated in).
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["MAX_OUTSIDE_CHARS", "MAX_RECORD_BYTES", "WATERFALL_POINTS", "StrategyMonth", "parse_strategy_month"]

MAX_RECORD_BYTES = 64 * 1024  # a record is a few hundred bytes; anything far larger is not one
MAX_OUTSIDE_CHARS = 4000      # the verdict lines of the workloads outside their contract, cut to this
# ADR-26's waterfall, from the ceiling the floors allow down to the achieved net: each item (as the replay's
# ``controllers.replay.waterfall`` names it) and the record's field holding the points of the wanted work's
# guaranteed value it takes, at the planning rates
WATERFALL_POINTS = {"floor": "floor_pts", "fallback spend": "fallback_pts", "shortfall": "shortfall_pts",
                    "wasted work": "wasted_work_pts", "surplus and make-before-break overlap": "overlap_pts",
                    "depth premium": "depth_premium_pts", "fit and pool rates": "fit_pts"}


class StrategyMonth(BaseModel):
    """One seed × strategy replayed for ``days`` after ``warmup_days`` of history."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = Field(ge=0, description="the simulated region's seed (its trace)")
    strategy: str = Field(min_length=1, max_length=64, description="placement strategy, e.g. depth-first")
    days: float = Field(gt=0, le=400, description="days replayed through the controller")
    warmup_days: float = Field(ge=0, le=400, description="history the rankings learn from first")
    revision: str = Field(default="", max_length=80, description="code or contract-repository revision replayed")
    interruptions_pct_h: float = Field(ge=0, description="interruptions per 100 instance-hours")
    interruptions: int = Field(ge=0)
    wasted_pct: float = Field(ge=0, description="wasted work, % of reclaimable unit-hours")
    shortfall_pct: float = Field(ge=0, description="unit-hours wanted but not held, %")
    shortfall_wait_pct: float = Field(ge=0, le=100, description="share of the shortfall on workloads that wait")
    net_pct: float = Field(description="net saving at the replay's rate card, % of the counterfactual")
    net_planning_pct: float = Field(description="net saving at the planning rates, % of the counterfactual")
    ceiling_pct: float = Field(description="net saving the floors allow with nothing lost, at the planning rates")
    worst_step_pct: float = Field(ge=0, le=100, description="largest share of one claim lost in one 5-min step")
    worst_workload: str = Field(default="", max_length=200)
    seconds: float = Field(ge=0, description="wall seconds the run took")
    # the waterfall (``WATERFALL_POINTS``); 0 in records written before it was stored
    floor_pts: float = Field(default=0.0, description="floor beyond its share of the work at the guaranteed rate")
    fallback_pts: float = Field(default=0.0, description="guaranteed hours bought for reclaimable work")
    shortfall_pts: float = Field(default=0.0, description="the saving the work not delivered would have made")
    wasted_work_pts: float = Field(default=0.0, description="work redone, at the guaranteed rate")
    overlap_pts: float = Field(default=0.0, description="surplus and make-before-break overlap")
    depth_premium_pts: float = Field(default=0.0, description="ADR-08's premium over price-first")
    fit_pts: float = Field(default=0.0, description="units an instance leaves unused, pools dearer than planned")
    achieved_pts: float = Field(default=0.0, description="the waterfall's foot: ceiling_pct less every item, the net "
                                                         "as points of the wanted (not the useful) work's value")
    workloads_outside: int = Field(default=0, ge=0, description="workloads outside their own declared contract")
    outside: str = Field(default="", max_length=MAX_OUTSIDE_CHARS,
                         description="each such workload's verdict and cause, a line each")

    @field_validator("interruptions_pct_h", "wasted_pct", "shortfall_pct", "net_pct", "net_planning_pct",
                     "ceiling_pct", "worst_step_pct", "seconds", *WATERFALL_POINTS.values(), "achieved_pts")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError(f"{v!r} is not a finite number")
        return v


def parse_strategy_month(text: str) -> StrategyMonth:
    """A record from its JSON (the bake-off's run output), bounded in size before it is parsed.

    Raises:
        ValueError: the text is larger than ``MAX_RECORD_BYTES`` or not a valid record (names the field).
    """
    if len(text.encode()) > MAX_RECORD_BYTES:
        raise ValueError(f"a strategy-month record of {len(text.encode()):,} bytes is over {MAX_RECORD_BYTES:,}")
    return StrategyMonth.model_validate(json.loads(text))
