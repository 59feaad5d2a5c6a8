-- The placement bake-off (contracts.bakeoff.StrategyMonth): one row per revision × seed × strategy × length,
-- written by the Dagster strategy_month asset; a re-run of the same partition replaces its row.
CREATE TABLE IF NOT EXISTS strategy_months (
    revision             String,
    seed                 UInt32,
    strategy             LowCardinality(String),
    days                 Float64,
    warmup_days          Float64,
    interruptions_pct_h  Float64,
    interruptions        UInt64,
    wasted_pct           Float64,
    shortfall_pct        Float64,
    shortfall_wait_pct   Float64,
    net_pct              Float64,
    net_planning_pct     Float64,
    ceiling_pct          Float64,
    worst_step_pct       Float64,
    worst_workload       String,
    seconds              Float64,
    recorded_at          DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(recorded_at)
ORDER BY (revision, seed, strategy, days);
