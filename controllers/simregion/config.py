"""Settings of the simulated region. Defaults reproduce the design's assumptions (DESIGN §5, §6): ≈ 4 % of
reclaimable nodes reclaimed an hour, 2 % of reclaims without notice, advisories for 65 % of reclaims with a
median lead of 6 minutes, 120 s notices, a rate card every 5 minutes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RegionConfig", "Strategy"]

Strategy = Literal["oldest", "newest", "best-fit", "random"]


class RegionConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    region: str = Field("r1", description="region name used in pool ids and NATS subjects")
    seed: int = Field(1, description="every random choice derives from it")
    pools: int | None = Field(None, ge=1, description="trim the reclaimable pools to this many (default all, 141)")
    slot_scale: float = Field(1.0, gt=0, description="multiply every pool's slots (reclaimable, committed, "
                              "guaranteed): a bigger region of the same shape, for the fleet-scale simulation")
    reclaim_rate_pct_h: float = Field(4.0, ge=0, description="% of reclaimable instances reclaimed an hour")
    no_notice_share: float = Field(0.02, ge=0, le=1, description="share of reclaimed instances given no notice")
    advisory_share: float = Field(0.65, ge=0, le=1, description="share of reclaims preceded by an advisory")
    advisory_median_s: float = Field(360.0, gt=0, description="median advisory lead time, seconds")
    advisory_sigma: float = Field(0.6, ge=0, description="log-normal sigma of the advisory lead time")
    notice_s: float = Field(120.0, ge=120, description="notice before deletion, seconds (the contract: >= 120)")
    rate_card_s: float = Field(300.0, gt=0, description="rate card interval, seconds")
    occupancy: float = Field(0.55, ge=0, le=1, description="share of pool slots other tenants keep filled")
    refill_mean_s: float = Field(900.0, gt=0, description="mean delay before another tenant refills a slot")
    victims_per_reclaim: float = Field(4.0, ge=1, description="mean instances one guaranteed request displaces")
    daily_amplitude: float = Field(0.5, ge=0, lt=1, description="guaranteed demand daily cycle amplitude")
    start_hour: float | None = Field(None, ge=0, lt=24, description="hour of day (UTC) the daily demand cycle "
                                     "starts at; default the clock's own hour at the start. A live demo pins it "
                                     "so its prices and reclaims do not depend on when it runs")
    bursts_per_aggregate_day: float = Field(0.3, ge=0, description="demand bursts per aggregate per day")
    burst_factor: float = Field(4.0, ge=1, description="reclaim intensity multiplier during a burst")
    burst_mean_s: float = Field(5400.0, gt=0, description="mean burst duration, seconds")
    aggregate_spread: float = Field(0.5, ge=0,
                                    description="log-normal sigma of per-aggregate demand (some aggregates busier)")
    room_first: bool = Field(False, description="guaranteed requests land in free room first and reclaim only "
                             "what does not fit (ADR-05), holding their room for guaranteed_hold_s; the replay's "
                             "traces use it. Off: every request reclaims (a live region at compressed rates, "
                             "which never reaches the steady state where room is full)")
    guaranteed_hold_s: float = Field(3600.0, gt=0, description="room_first: mean time a landed guaranteed "
                                     "request holds the room it took, seconds")
    hall_reclaims_per_30d: float = Field(1.0, ge=0, description="hall-wide reclaims (power/cooling) per 30 days")
    hall_outage_s: float = Field(7200.0, ge=0, description="how long a reclaimed hall lends nothing")
    price_demand: float = Field(1.0, ge=-1, le=1, description="how much of its aggregate's utilisation a pool's "
                                "price follows: 1 all of it, 0 none (flat), -1 inverted (economics.py)")
    strategy: Strategy = Field("oldest", description="reclaimer victim selection (as CERN's reaper)")
    quota_instances: int = Field(5000, ge=0, description="orchestrator project quota: instances")
    quota_vcpu: int = Field(80000, ge=0, description="orchestrator project quota: vCPU")
    background: bool = Field(True, description="fill pools with other tenants' reclaimable instances")
