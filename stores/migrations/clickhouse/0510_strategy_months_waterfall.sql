-- Where each strategy-month's saving went (ADR-26's waterfall, points of the wanted work's guaranteed value at the
-- planning rates, contracts.bakeoff.WATERFALL_POINTS) and the workloads outside their own contract; rows written
-- before these columns read 0 and ''.
ALTER TABLE strategy_months
    ADD COLUMN IF NOT EXISTS floor_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS fallback_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS shortfall_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS wasted_work_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS overlap_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS depth_premium_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS fit_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS achieved_pts Float64 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS workloads_outside UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS outside String DEFAULT '';
