-- What analytics put in force (rankings_in_force, correlation_groups) has a version per region, bumped by every
-- statement that changes a region's rows (a trigger, whoever writes), so a controller pass reads one row to know
-- whether the ranking changed. Reading a version off every row's xmin scanned the dead rows each replaced ranking
-- leaves until autovacuum comes (231 a replacement, every five minutes): the costliest statement of a replayed
-- day in PostgreSQL. A replacement (orchestration.store.replace_in_force) is one DELETE and one INSERT: two bumps,
-- committed with the rows. Idempotent.
CREATE TABLE IF NOT EXISTS in_force_versions (
    tbl      text NOT NULL CHECK (tbl IN ('rankings_in_force', 'correlation_groups')),
    region   text NOT NULL,
    version  bigint NOT NULL CHECK (version > 0),
    PRIMARY KEY (tbl, region)
);

CREATE OR REPLACE FUNCTION bump_in_force_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO in_force_versions AS v (tbl, region, version)
        SELECT TG_TABLE_NAME, c.region, 1 FROM (SELECT DISTINCT region FROM changed) AS c
    ON CONFLICT (tbl, region) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
END
$$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['rankings_in_force', 'correlation_groups'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_version_ins', t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_version_upd', t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_version_del', t);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS changed '
                       'FOR EACH STATEMENT EXECUTE FUNCTION bump_in_force_version()', t || '_version_ins', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS changed '
                       'FOR EACH STATEMENT EXECUTE FUNCTION bump_in_force_version()', t || '_version_upd', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS changed '
                       'FOR EACH STATEMENT EXECUTE FUNCTION bump_in_force_version()', t || '_version_del', t);
    END LOOP;
END
$$;
