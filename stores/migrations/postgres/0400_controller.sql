-- The controller's own state (issue 6), beside the stack's tables. Idempotent.
ALTER TABLE instances ADD COLUMN IF NOT EXISTS purpose text NOT NULL DEFAULT 'reclaimable';
ALTER TABLE instances ADD COLUMN IF NOT EXISTS hall text;
ALTER TABLE instances ADD COLUMN IF NOT EXISTS name text;

-- Exclusions keep their evidence (ADR-07: the decision and the evidence together), the offence count that
-- doubles the cool-off, and the end of probation.
ALTER TABLE exclusions ADD COLUMN IF NOT EXISTS evidence jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE exclusions ADD COLUMN IF NOT EXISTS offences integer NOT NULL DEFAULT 1;
ALTER TABLE exclusions ADD COLUMN IF NOT EXISTS probation_until timestamptz;

-- Every controller pass, so that "two read-only cycles after a restart" can be read back (ADR-12).
CREATE TABLE IF NOT EXISTS controller_cycles (
    id           bigserial PRIMARY KEY,
    region       text NOT NULL,
    partition    text NOT NULL,
    holder       text NOT NULL,
    started_at   timestamptz NOT NULL,
    read_only    boolean NOT NULL,
    launched     integer NOT NULL DEFAULT 0,
    terminated   integer NOT NULL DEFAULT 0,
    held         integer NOT NULL DEFAULT 0,
    generation   bigint NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS controller_cycles_by_partition ON controller_cycles (region, partition, id);

-- Approval requests beyond a spend cap (ADR-23).
CREATE TABLE IF NOT EXISTS approval_requests (
    request_id    uuid PRIMARY KEY,
    workload      text NOT NULL,
    region        text NOT NULL,
    approver      text,
    requested_at  timestamptz NOT NULL,
    state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'granted', 'expired')),
    options       jsonb NOT NULL DEFAULT '[]'::jsonb,
    granted_eur   numeric(18, 6) NOT NULL DEFAULT 0,
    answered_at   timestamptz
);
CREATE INDEX IF NOT EXISTS approval_requests_by_workload ON approval_requests (workload, requested_at);
