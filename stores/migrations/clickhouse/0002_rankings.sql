-- Every ranking kept with its inputs (ADR-07): 90 days in full, then a 13-month monthly aggregate.
CREATE TABLE IF NOT EXISTS rankings (
    ranked_at                 DateTime64(3, 'UTC'),
    generation                UInt64,
    region                    LowCardinality(String),
    pool                      LowCardinality(String),
    rank                      UInt32,
    score                     Float64,
    interruption_rate_pct_h   Float64,
    discount                  Float64,
    depth                     Float64,
    excluded                  Bool DEFAULT false,
    inputs                    String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ranked_at)
ORDER BY (region, pool, ranked_at)
TTL toDateTime(ranked_at) + INTERVAL 90 DAY;

CREATE TABLE IF NOT EXISTS rankings_monthly (
    month                        Date,
    region                       LowCardinality(String),
    pool                         LowCardinality(String),
    samples                      UInt64,
    rank_sum                     UInt64,
    score_sum                    Float64,
    interruption_rate_pct_h_sum  Float64,
    discount_sum                 Float64,
    excluded_samples             UInt64
)
ENGINE = SummingMergeTree
ORDER BY (region, pool, month)
TTL month + INTERVAL 13 MONTH;

CREATE MATERIALIZED VIEW IF NOT EXISTS rankings_monthly_mv TO rankings_monthly AS
SELECT toStartOfMonth(ranked_at) AS month, region, pool, count() AS samples, sum(rank) AS rank_sum,
       sum(score) AS score_sum, sum(interruption_rate_pct_h) AS interruption_rate_pct_h_sum,
       sum(discount) AS discount_sum, countIf(excluded) AS excluded_samples
FROM rankings
GROUP BY month, region, pool;
