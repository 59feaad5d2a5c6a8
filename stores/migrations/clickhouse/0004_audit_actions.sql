-- Capacity actions (launch, terminate, fallback, approval) with their causing identity (ADR-25), written
-- by the outbox relay directly — not through the telemetry stream — and kept seven years.
CREATE TABLE IF NOT EXISTS audit_actions (
    action_id         String,
    time              DateTime64(3, 'UTC'),
    action            LowCardinality(String),
    actor             String,
    kind              LowCardinality(String),
    region            LowCardinality(String),
    partition         String,
    pool              String,
    instance          String,
    workload          String,
    cause             String,
    drill             Bool,
    payload           String,
    recorded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYear(time)
ORDER BY action_id
TTL toDateTime(time) + INTERVAL 7 YEAR;
