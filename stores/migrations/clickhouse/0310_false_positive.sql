-- False-positive advisories (ADR-16, issue 19): the drained hours of an advisory no reclaim followed, charged to
-- the workload that opted in. Part of wasted_hours / wasted_eur (removed from useful work once), shown beside them.
ALTER TABLE savings_ledger ADD COLUMN IF NOT EXISTS false_positive_hours Decimal(18, 6) DEFAULT 0 AFTER fallback_hours;
ALTER TABLE savings_ledger ADD COLUMN IF NOT EXISTS false_positive_eur Decimal(18, 6) DEFAULT 0 AFTER false_positive_hours;
