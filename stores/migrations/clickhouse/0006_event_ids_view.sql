-- event_ids filled by ClickHouse itself (stores.eventids), so that the ingest stores a batch with one plain insert
-- instead of looking the ids up, inserting the events and then the ids: three requests and two digests a row.
--
-- 1. A materialized view on events records each stored row's id with a digest of the row as stored. It runs after
--    the events' part is written: a crash in between leaves an event without its id (stored again on redelivery,
--    collapsed by the ReplacingMergeTree), never an id without its event.
-- 2. The ingest inserts into events_ingest (engine Null: it keeps nothing); its view stores in events the rows
--    whose ids event_ids does not hold — a primary-key lookup of the inserted block's ids (in a materialized view,
--    the source table read in the subquery is the inserted block). Columns: those of events (a column added to
--    events is added here too).
--
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

CREATE TABLE IF NOT EXISTS events_ingest AS events ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS events_of_new_ids TO events AS
SELECT event_id, kind, time, region, partition, pool, instance, workload, contract_version, cause, drill, source,
       attributes
FROM events_ingest
WHERE event_id NOT IN (SELECT event_id FROM event_ids WHERE event_id IN (SELECT event_id FROM events_ingest));
