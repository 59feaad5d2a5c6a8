-- The orchestrator's own footprint (ADR-26, issue 19): each long-running process of the orchestrator
-- (controller, exclusion watcher, ingest, outbox relay) samples its cumulative CPU seconds and resident memory
-- about once a minute; the orchestrator_usage asset turns an hour of samples into the hour's cost.
CREATE TABLE IF NOT EXISTS process_usage (
    region       text NOT NULL,
    component    text NOT NULL,
    process      text NOT NULL,              -- host:pid:start, one process's life
    sampled_at   timestamptz NOT NULL,
    cpu_s        double precision NOT NULL,  -- cumulative user + system CPU seconds of the process
    rss_bytes    bigint NOT NULL,
    PRIMARY KEY (process, sampled_at)
);
CREATE INDEX IF NOT EXISTS process_usage_by_time ON process_usage (region, sampled_at);
