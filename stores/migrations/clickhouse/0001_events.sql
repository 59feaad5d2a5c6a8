-- Lifecycle events (ADR-25), 400 days. Columns are exactly contracts.events.Event.row().
-- ReplacingMergeTree keyed on event_id (region and kind are functions of the event, so the sorting key
-- (region, kind, event_id) still collapses copies of one event). Read with FINAL or count(DISTINCT event_id)
-- when an exact count matters: a redelivery after a crash between insert and ack lands twice until merged.
CREATE TABLE IF NOT EXISTS events (
    event_id          String,
    kind              LowCardinality(String),
    time              DateTime64(3, 'UTC'),
    region            LowCardinality(String),
    partition         LowCardinality(String),
    pool              LowCardinality(String),
    instance          String,
    workload          LowCardinality(String),
    contract_version  String,
    cause             String,
    drill             Bool,
    source            LowCardinality(String),
    attributes        String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (region, kind, event_id)
TTL toDateTime(time) + INTERVAL 400 DAY;

-- What the ingest could not parse: kept with the reason, never retried (the stream moves on).
CREATE TABLE IF NOT EXISTS events_dead_letter (
    received_at   DateTime64(3, 'UTC'),
    subject       String,
    stream_seq    UInt64,
    msg_id        String,
    reason        String,
    payload       String
)
ENGINE = ReplacingMergeTree
ORDER BY (stream_seq, msg_id)
TTL toDateTime(received_at) + INTERVAL 400 DAY;
