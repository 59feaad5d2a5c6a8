-- The controller counts the region's fallback launches of the last minute every pass (the 40/min stagger,
-- ADR-23); without an index that count scans every instance row the region ever had. Idempotent.
CREATE INDEX IF NOT EXISTS instances_fallback_recent ON instances (region, launched_at) WHERE purpose = 'fallback';
