-- The controller's bundle chain (issue 14): the last verified controller bundle of each partition and how many
-- verified bundles its controller refused (an older generation, a fork, another partition's). Idempotent.
CREATE TABLE IF NOT EXISTS controller_bundles (
    partition      text PRIMARY KEY,
    kind           text,
    generation     bigint,
    source_digest  text,
    refused        integer NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
