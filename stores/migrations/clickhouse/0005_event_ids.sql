-- Every event id the ingest has stored, with a digest of the row it stored under it (stores.eventids): a
-- second payload under a stored id — a publisher reusing an id without Nats-Msg-Id, so JetStream's own
-- deduplication never saw it — is dead-lettered instead of stored beside the first (the events table's
-- sorting key holds region and kind, so such copies would never collapse); the same payload again is
-- acknowledged and not stored twice. Keyed on the id alone: the lookup is by primary key.
CREATE TABLE IF NOT EXISTS event_ids (
    event_id  String,
    digest    String,
    time      DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY event_id
TTL toDateTime(time) + INTERVAL 400 DAY;
