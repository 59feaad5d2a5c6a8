-- The region's shared token budget (ADR-12, issue 18): one row per region that every partition controller's
-- mutating provider calls draw from (controllers/controller/budget.py: RegionBudget). ``tokens`` banked at
-- ``at`` (seconds on the budget's clock), refilled at ``rate`` a second up to ``burst``. Idempotent.
CREATE TABLE IF NOT EXISTS region_token_budget (
    region  text PRIMARY KEY,
    rate    double precision NOT NULL CHECK (rate > 0),
    burst   double precision NOT NULL CHECK (burst >= 1),
    tokens  double precision NOT NULL,
    at      double precision NOT NULL,
    spent   bigint NOT NULL DEFAULT 0,
    refused bigint NOT NULL DEFAULT 0
);
