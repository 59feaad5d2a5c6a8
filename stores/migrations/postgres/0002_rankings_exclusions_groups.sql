-- Written by the Dagster assets and the streaming exclusion watcher; read by the controller (DESIGN §2).
CREATE TABLE IF NOT EXISTS rankings_in_force (
    region       text NOT NULL,
    pool         text NOT NULL,
    rank         integer NOT NULL CHECK (rank > 0),
    score        double precision NOT NULL,
    generation   bigint NOT NULL,
    ranked_at    timestamptz NOT NULL,
    inputs       jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (region, pool)
);
CREATE INDEX IF NOT EXISTS rankings_in_force_order ON rankings_in_force (region, rank);

CREATE TABLE IF NOT EXISTS exclusions (
    region       text NOT NULL,
    pool         text NOT NULL,
    reason       text NOT NULL,
    source       text NOT NULL DEFAULT 'exclusion-watcher',
    excluded_at  timestamptz NOT NULL,
    until        timestamptz,                    -- NULL: until readmitted
    PRIMARY KEY (region, pool)
);

CREATE TABLE IF NOT EXISTS correlation_groups (
    region       text NOT NULL,
    pool         text NOT NULL,
    group_id     text NOT NULL,
    phi          double precision,               -- strongest co-reclamation coefficient inside the group
    computed_at  timestamptz NOT NULL,
    PRIMARY KEY (region, pool)
);
CREATE INDEX IF NOT EXISTS correlation_groups_by_group ON correlation_groups (region, group_id);
