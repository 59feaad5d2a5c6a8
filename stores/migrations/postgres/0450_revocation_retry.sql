-- A terminated or lost instance whose credential revocation failed (ADR-31, issue 16) is retried on a later
-- pass: the next attempt's time (backing off), the attempts so far and the last error. NULL next time: nothing
-- left to retry. Idempotent.
ALTER TABLE instances ADD COLUMN IF NOT EXISTS revocation_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE instances ADD COLUMN IF NOT EXISTS revocation_next_at timestamptz;
ALTER TABLE instances ADD COLUMN IF NOT EXISTS revocation_error text;
CREATE INDEX IF NOT EXISTS instances_revocation_due ON instances (region, partition, revocation_next_at)
    WHERE revocation_next_at IS NOT NULL;
