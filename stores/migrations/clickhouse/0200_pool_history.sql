-- Pool history from the provider (issue 4): the rate card every five minutes with the pool's occupancy, and
-- the pool catalogue. Written live by the provider feed and in bulk by `sco sim history`. Reclaims, notices
-- and advisories are lifecycle events in `events` (source 'simregion' or the provider's feed):
--   kind 'terminated' with cause 'reclaimed' | 'reclaimed-no-notice' | 'hall-reclaim' | 'hall-reclaim-no-notice'
--   (drills: cause 'drill', drill = true); kind 'notice'; kind 'advisory'.
-- Interruption rate of a pool = reclaims / instance-hours, instance-hours = sum(instances) * 5 / 60.
CREATE TABLE IF NOT EXISTS rate_cards (
    time                   DateTime64(3, 'UTC'),
    region                 LowCardinality(String),
    pool                   LowCardinality(String),
    rate_eur_h             Decimal(12, 4),
    guaranteed_rate_eur_h  Decimal(12, 4),
    utilisation            Float64,
    free_instances         UInt32,
    instances              UInt32,
    capacity               UInt32,
    source                 LowCardinality(String)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (region, pool, time)
TTL toDateTime(time) + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS provider_pools (
    region                  LowCardinality(String),
    pool                    String,
    hall                    LowCardinality(String),
    aggregate               LowCardinality(String),
    sku_family              LowCardinality(String),
    size                    LowCardinality(String),
    vcpu                    UInt32,
    memory_gib              UInt32,
    gpu                     UInt32,
    purchase_model          LowCardinality(String),
    business_unit           LowCardinality(String),
    rate_eur_h              Decimal(12, 4),
    guaranteed_rate_eur_h   Decimal(12, 4),
    slots                   UInt32,
    updated_at              DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (region, pool);
