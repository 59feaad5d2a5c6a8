-- Fleet state (ADR-11): a cache of convenience; provider tags on the instances are the truth.
CREATE TABLE IF NOT EXISTS instances (
    instance_id      text PRIMARY KEY,
    region           text NOT NULL,
    partition        text NOT NULL,
    pool             text NOT NULL,
    workload         text,
    plan_generation  bigint,
    state            text NOT NULL DEFAULT 'launching'
                     CHECK (state IN ('launching', 'running', 'draining', 'terminating', 'terminated', 'lost')),
    purchase_model   text NOT NULL DEFAULT 'reclaimable',
    provider_tags    jsonb NOT NULL DEFAULT '{}'::jsonb,   -- the tags as the provider holds them
    idle_observations integer NOT NULL DEFAULT 0,         -- apparent-orphan counter (ADR-12)
    launched_at      timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS instances_by_partition ON instances (region, partition, state);
CREATE INDEX IF NOT EXISTS instances_by_workload ON instances (workload) WHERE workload IS NOT NULL;
CREATE INDEX IF NOT EXISTS instances_tags ON instances USING gin (provider_tags);

-- Plans: one row per (workload, generation); the highest generation in force is the plan.
CREATE TABLE IF NOT EXISTS plans (
    workload     text NOT NULL,
    generation   bigint NOT NULL CHECK (generation > 0),
    region       text NOT NULL,
    partition    text NOT NULL,
    plan         jsonb NOT NULL,                 -- pool -> units, floor, group shares
    in_force     boolean NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workload, generation)
);
CREATE INDEX IF NOT EXISTS plans_in_force ON plans (region, partition) WHERE in_force;

-- Capacity claims turned from pending Kubernetes/Slurm work.
CREATE TABLE IF NOT EXISTS claims (
    claim_id     text PRIMARY KEY,
    workload     text NOT NULL,
    region       text NOT NULL,
    partition    text NOT NULL,
    source       text NOT NULL,                  -- kubernetes | slurm | ...
    units        numeric(12, 3) NOT NULL CHECK (units >= 0),
    state        text NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'placed', 'refused', 'satisfied', 'cancelled')),
    reason       text,
    attributes   jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS claims_open ON claims (region, partition, state) WHERE state IN ('pending', 'placed');

-- Contracts in force: the compiled contract each workload runs under.
CREATE TABLE IF NOT EXISTS contracts_in_force (
    workload          text PRIMARY KEY,
    contract_version  text NOT NULL,
    tier              text,
    region            text,
    partition         text,
    spec              jsonb NOT NULL,
    bundle_digest     text,
    effective_at      timestamptz NOT NULL DEFAULT now()
);
