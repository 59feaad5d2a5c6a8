-- The reclaim forecast scored each day on that day's realised reclaims (orchestration.forecast.daily): its log-loss
-- and Brier score per instance beside the baselines' (JSON: name -> [log-loss, Brier]), the reliability diagram's
-- bins (JSON: [[mean forecast, observed share, instances], ...]) and whether it beat every baseline on both.
CREATE TABLE IF NOT EXISTS forecast_scores (
    scored_at          DateTime64(3, 'UTC'),
    region             LowCardinality(String),
    day                Date,
    horizon_min        UInt32,
    model_version      String,
    samples            UInt64,
    forecast_log_loss  Float64,
    forecast_brier     Float64,
    baselines          String,
    reliability        String,
    passed             Bool
)
ENGINE = ReplacingMergeTree(scored_at)
ORDER BY (region, day, horizon_min)
TTL day + INTERVAL 400 DAY;
