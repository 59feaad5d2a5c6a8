-- The ranking in force carries the reclaim forecast (orchestration.forecast) beside the composite score, which
-- other readers keep using. reclaim_p_1h: P(an instance placed in the pool now is reclaimed within 1 h), with
-- notice or without; reclaim_p: horizon minutes -> {"notice": p, "no_notice": p} for every horizon forecast (1 h
-- and the longest checkpoint interval the contracts declare); model_version: the fitted model's hash (training
-- window + parameters). NULL while no model has been fitted (a fresh history): readers fall back on the score.
-- Idempotent.
ALTER TABLE rankings_in_force ADD COLUMN IF NOT EXISTS reclaim_p_1h double precision
    CHECK (reclaim_p_1h IS NULL OR (reclaim_p_1h >= 0 AND reclaim_p_1h <= 1));
ALTER TABLE rankings_in_force ADD COLUMN IF NOT EXISTS reclaim_p jsonb;
ALTER TABLE rankings_in_force ADD COLUMN IF NOT EXISTS model_version text;
