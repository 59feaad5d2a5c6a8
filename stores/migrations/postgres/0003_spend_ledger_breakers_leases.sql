-- The spend ledger (ADR-23): money is numeric EUR, reserved before launch, spent against a reservation.
CREATE TABLE IF NOT EXISTS spend_reservations (
    reservation_id  uuid PRIMARY KEY,
    workload        text NOT NULL,
    region          text NOT NULL,
    amount_eur      numeric(18, 6) NOT NULL CHECK (amount_eur >= 0),
    window_start    timestamptz NOT NULL,
    window_end      timestamptz NOT NULL CHECK (window_end > window_start),
    state           text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'consumed', 'released')),
    approver        text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS spend_reservations_window ON spend_reservations (workload, window_start, window_end);

CREATE TABLE IF NOT EXISTS spends (
    spend_id        uuid PRIMARY KEY,
    reservation_id  uuid REFERENCES spend_reservations (reservation_id),
    workload        text NOT NULL,
    region          text NOT NULL,
    instance_id     text,
    pool            text,
    amount_eur      numeric(18, 6) NOT NULL CHECK (amount_eur >= 0),
    spent_at        timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS spends_by_workload ON spends (workload, spent_at);

-- Termination breakers and token budgets (ADR-12), per region and partition.
CREATE TABLE IF NOT EXISTS breakers (
    region       text NOT NULL,
    partition    text NOT NULL,
    name         text NOT NULL,                  -- termination | launch | fallback | recovery
    state        text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half-open')),
    reason       text,
    tripped_at   timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (region, partition, name)
);

-- One controller owns a partition at a time; the generation fences a stale holder.
CREATE TABLE IF NOT EXISTS partition_leases (
    region       text NOT NULL,
    partition    text NOT NULL,
    holder       text NOT NULL,
    generation   bigint NOT NULL DEFAULT 1,
    lease_until  timestamptz NOT NULL,
    PRIMARY KEY (region, partition)
);
