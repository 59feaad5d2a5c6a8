-- Analytics (issue 7): what the Dagster assets write besides rankings (0002) and cost_attribution (0003),
-- and the two cost inputs that do not come from events (checkpoint storage, the orchestrator's footprint).
-- The pool catalogue and rate cards are read from provider_pools and rate_cards (0200).

CREATE TABLE IF NOT EXISTS correlation_group_history (
    computed_at      DateTime64(3, 'UTC'),
    region           LowCardinality(String),
    pool             String,
    group_id         String,
    topology_group   String,
    max_phi          Float64
)
ENGINE = ReplacingMergeTree
ORDER BY (region, computed_at, pool)
TTL toDateTime(computed_at) + INTERVAL 400 DAY;

-- Every split or merge with its evidence (ADR-06).
CREATE TABLE IF NOT EXISTS correlation_group_changes (
    computed_at      DateTime64(3, 'UTC'),
    region           LowCardinality(String),
    kind             LowCardinality(String),
    pools            Array(String),
    groups           Array(String),
    phi              Float64,
    joint_windows    UInt32,
    windows          Array(UInt32)
)
ENGINE = MergeTree
ORDER BY (region, computed_at)
TTL toDateTime(computed_at) + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS advisory_precision (
    computed_at      DateTime64(3, 'UTC'),
    region           LowCardinality(String),
    pool             String,
    advisories       UInt64,
    followed         UInt64,
    reclaims         UInt64,
    advised_reclaims UInt64,
    precision        Float64,
    recall           Float64
)
ENGINE = ReplacingMergeTree
ORDER BY (region, pool, computed_at)
TTL toDateTime(computed_at) + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS contract_breaches (
    computed_at             DateTime64(3, 'UTC'),
    workload                String,
    window_days             UInt32,
    instance_hours          Float64,
    interruptions           UInt64,
    measured_rate_pct_h     Float64,
    declared_rate_pct_h     Float64,
    breach                  Bool,
    owner                   String
)
ENGINE = ReplacingMergeTree
ORDER BY (workload, computed_at)
TTL toDateTime(computed_at) + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS recommendations (
    computed_at      DateTime64(3, 'UTC'),
    workload         String,
    direction        LowCardinality(String),   -- off-reclaimable | onto-reclaimable | stay
    reason           String,
    net_saving_eur   Decimal(18, 6),
    net_pct          Float64,
    interruption_pct_h Float64
)
ENGINE = ReplacingMergeTree
ORDER BY (workload, computed_at)
TTL toDateTime(computed_at) + INTERVAL 400 DAY;

-- The ledger per workload × hour as the savings_attribution asset computed it (dbt's fct_savings_ledger is
-- built from cost_attribution + the inputs below; a check keeps the two equal).
CREATE TABLE IF NOT EXISTS savings_ledger (
    hour                 DateTime('UTC'),
    workload             LowCardinality(String),
    instance_hours       Decimal(18, 6),
    useful_hours         Decimal(18, 6),
    counterfactual_eur   Decimal(18, 6),
    gross_saving_eur     Decimal(18, 6),
    reclaimable_eur      Decimal(18, 6),
    floor_eur            Decimal(18, 6),
    fallback_eur         Decimal(18, 6),
    headroom_eur         Decimal(18, 6),
    storage_eur          Decimal(18, 6),
    orchestrator_eur     Decimal(18, 6),
    costs_eur            Decimal(18, 6),
    net_saving_eur       Decimal(18, 6),
    wasted_hours         Decimal(18, 6),
    wasted_eur           Decimal(18, 6),
    defect_wasted_hours  Decimal(18, 6),
    defect_wasted_eur    Decimal(18, 6),
    depth_premium_eur    Decimal(18, 6),
    reclaimable_hours    Decimal(18, 6),
    fallback_hours       Decimal(18, 6),
    label                LowCardinality(String),
    computed_at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYear(hour)
ORDER BY (workload, hour)
TTL hour + INTERVAL 7 YEAR;

-- Checkpoint storage per workload and hour (from RGW usage), and the orchestrator's own cost per hour.
CREATE TABLE IF NOT EXISTS storage_usage (
    hour             DateTime('UTC'),
    workload         LowCardinality(String),
    gib_hours        Decimal(18, 6),
    eur_per_gib_h    Decimal(18, 9)
)
ENGINE = ReplacingMergeTree
ORDER BY (workload, hour)
TTL hour + INTERVAL 7 YEAR;

CREATE TABLE IF NOT EXISTS orchestrator_usage (
    hour             DateTime('UTC'),
    region           LowCardinality(String),
    cost_eur         Decimal(18, 6)
)
ENGINE = ReplacingMergeTree
ORDER BY (region, hour)
TTL hour + INTERVAL 7 YEAR;
