-- Hourly cost attribution (ADR-26), kept seven years; one row per hour × workload × pool.
-- Money is Decimal(18, 6) EUR. Recomputing an hour replaces its rows (ReplacingMergeTree on the key).
CREATE TABLE IF NOT EXISTS cost_attribution (
    hour                  DateTime('UTC'),
    region                LowCardinality(String),
    workload              LowCardinality(String),
    pool                  LowCardinality(String),
    purchase_model        LowCardinality(String),
    instance_hours        Float64,
    units_hours           Float64,
    cost_eur              Decimal(18, 6),
    counterfactual_eur    Decimal(18, 6),
    saving_eur            Decimal(18, 6),
    wasted_work_eur       Decimal(18, 6) DEFAULT 0,
    computed_at           DateTime64(3, 'UTC') DEFAULT now64(3),
    attributes            String DEFAULT '{}'
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYear(hour)
ORDER BY (region, workload, pool, purchase_model, hour)
TTL hour + INTERVAL 7 YEAR;
