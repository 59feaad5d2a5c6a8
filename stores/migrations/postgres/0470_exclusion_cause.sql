-- An exclusion carries its cause (issue 19): 'reclaim' (reclamation waves, launches reclaimed young: units move
-- away) or 'full' (launches refused: the pool is closed to new units, the units held there stay). Rows written
-- before the column existed were all treated as 'reclaim'. Idempotent.
ALTER TABLE exclusions ADD COLUMN IF NOT EXISTS cause text NOT NULL DEFAULT 'reclaim';
-- Each pass counts every partition's instances launched since the rate card (the room the card still shows as
-- free); without an index that count scans every instance row the region ever had.
CREATE INDEX IF NOT EXISTS instances_region_launched ON instances (region, launched_at);
