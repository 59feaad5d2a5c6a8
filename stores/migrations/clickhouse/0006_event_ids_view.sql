-- event_ids filled by ClickHouse itself (stores.eventids): a materialized view on events records each stored row's
-- id with a digest of the row as stored, so the ingest inserts a batch once — one request that stores the rows
-- whose ids are not in event_ids — instead of looking the ids up, inserting the events and then the ids. The view
-- runs after the events' part is written, so a crash in between leaves an event without its id (stored again on
-- redelivery, collapsed by the ReplacingMergeTree), never an id without its event.
-- The digest is ClickHouse's now (the text of the row's tuple, SHA-256, 32 hex digits; the same expression as
-- stores.eventids.DIGEST_SQL): the digests the ingest computed in Python until now are dropped and every stored
-- event's id recorded again from events. Each statement may run again after a failure.
TRUNCATE TABLE IF EXISTS event_ids;

CREATE MATERIALIZED VIEW IF NOT EXISTS event_ids_of_events TO event_ids AS
SELECT event_id,
       lower(hex(substring(SHA256(toString(tuple(kind, time, region, partition, pool, instance, workload,
           contract_version, cause, drill, source, attributes))), 1, 16))) AS digest,
       time
FROM events;

INSERT INTO event_ids
SELECT event_id,
       lower(hex(substring(SHA256(toString(tuple(kind, time, region, partition, pool, instance, workload,
           contract_version, cause, drill, source, attributes))), 1, 16))) AS digest,
       time
FROM events;
