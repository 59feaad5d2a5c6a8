"""The compiler's settings: measured platform figures the feasibility rules compute with.

They live in ``compiler.yaml`` at the root of the contract repository (every field optional) so that a
change of measured store throughput or reclaim rate is a reviewed change like any contract.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompilerSettings"]


class CompilerSettings(BaseModel):
    """Platform settings the compiler checks contracts against (each field says its unit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    notice_s: int = Field(120, description="hard notice before deletion, seconds (ADR-05)")
    advisory_threshold_s: int = Field(115, description="drain budgets above this need advisory drain (ADR-16)")
    store_throughput_mib_s: Decimal = Field(
        Decimal("50"), gt=0, description="measured checkpoint-store write throughput per writer, MiB/s")
    final_write_overhead_s: int = Field(
        10, ge=0, description="seconds from notice to the first checkpoint byte, plus the manifest write")
    reclaim_rate_pct_h: Decimal = Field(
        Decimal("4"), gt=0, description="assumed share of reclaimable nodes reclaimed an hour, percent (ADR-20)")
    unprotected_share_pct: Decimal = Field(
        Decimal("3.5"), gt=0, le=100,
        description="share of reclaims without a successful final write (no notice, overrun, failed write)")
    wasted_work_budget_pct: Decimal = Field(Decimal("3"), gt=0, description="wasted-work budget, percent")
    checkpoint_interval_cap_min: int = Field(60, ge=1, description="cap on the derived periodic interval")
    min_pools: int = Field(8, ge=1, description="minimum eligible reclaimable pools (ADR-06)")
    discount_threshold: Decimal = Field(
        Decimal("0.85"), gt=0, le=1, description="pools priced at or above this share of guaranteed are excluded")
    min_floor_halls: int = Field(3, ge=1, description="committed capacity for a floor must span this many halls")
    canary_partition: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="<region>/<cluster> that receives a new bundle generation first (ADR-32); unset: no rollout")
    canary_soak_h: Decimal = Field(
        Decimal("24"), gt=0, description="hours the canary's gates must hold before promotion to all (ADR-32)")
    agent_canary_share_pct: Decimal = Field(
        Decimal("5"), ge=0, le=100, description="share of new launches given the candidate agent version, percent")
