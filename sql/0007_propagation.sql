-- 0007_propagation.sql - per-organization configuration generations, so the
-- refresher rebuilds only the snapshot parts of the organizations a change
-- touched (doc/choices.md, "Incremental snapshots").
--
-- Invariants kept here:
-- - config_generation still moves by exactly one per transaction that
--   changes what evaluation reads, and NOTIFY ensign_config still carries
--   the new generation.
-- - config_org_generation.generation of an organization is the
--   config_generation of the last transaction that changed one of its rows
--   that evaluation reads (flags, variants, flag configurations, rules,
--   segments, entities and their attributes, environments, SDK keys).
--   Values come from the database, so every node stamps the same
--   generation on an organization's snapshot part (and its ETags).
-- - A row stays after its organization is deleted (no foreign key: the
--   deferred trigger may record an organization whose row is already gone);
--   such an organization has no environments and no snapshot part.
-- - TRUNCATE of a feeding table marks every organization, and so does a
--   row of a feeding table that has no org_id column and is not known here.

CREATE TABLE config_org_generation (
    org_id     uuid PRIMARY KEY,
    generation bigint NOT NULL
);
INSERT INTO config_org_generation (org_id, generation)
SELECT o.id, g.generation FROM orgs o CROSS JOIN config_generation g;

-- The organization of a row of a feeding table: NULL when the flag or
-- entity it belongs to is already gone (that row's own trigger marked it);
-- the nil uuid, meaning every organization, for a feeding table added later
-- whose rows name no org_id (so nothing is ever missed).
CREATE FUNCTION ensign_config_row_org(table_name name, r record) RETURNS uuid
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    found_org uuid;
BEGIN
    IF table_name IN ('variants', 'flag_environments', 'rules') THEN
        SELECT org_id INTO found_org FROM flags WHERE id = r.flag_id;
    ELSIF table_name = 'entity_attributes' THEN
        SELECT org_id INTO found_org FROM entities WHERE id = r.entity_id;
    ELSIF table_name IN ('flags', 'segments', 'entities', 'environments', 'sdk_keys') THEN
        found_org := r.org_id;
    ELSE
        found_org := coalesce((to_jsonb(r) ->> 'org_id')::uuid,
                              '00000000-0000-0000-0000-000000000000');
    END IF;
    RETURN found_org;
END
$$;

-- The deferred trigger of every feeding table (0001_init.sql attaches it):
-- one bump of config_generation per transaction, then the row's
-- organization recorded once per transaction with that generation.
CREATE OR REPLACE FUNCTION ensign_bump_config_generation() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    new_generation bigint;
    row_org uuid;
    marked text := coalesce(current_setting('ensign.config_orgs', true), '');
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        IF TG_OP = 'DELETE' THEN
            row_org := ensign_config_row_org(TG_TABLE_NAME, OLD);
        ELSE
            row_org := ensign_config_row_org(TG_TABLE_NAME, NEW);
        END IF;
        IF row_org IS NOT NULL AND position(row_org::text IN marked) > 0 THEN
            RETURN NULL;
        END IF;
    END IF;
    IF coalesce(current_setting('ensign.config_bumped', true), '') = 'on' THEN
        SELECT generation INTO new_generation FROM config_generation WHERE id = 1;
    ELSE
        UPDATE config_generation SET generation = generation + 1 WHERE id = 1
            RETURNING generation INTO new_generation;
        PERFORM set_config('ensign.config_bumped', 'on', true);
        PERFORM pg_notify('ensign_config', new_generation::text);
    END IF;
    IF TG_LEVEL = 'STATEMENT' OR row_org = '00000000-0000-0000-0000-000000000000' THEN
        UPDATE config_org_generation SET generation = new_generation;
        INSERT INTO config_org_generation (org_id, generation)
        SELECT id, new_generation FROM orgs
        ON CONFLICT (org_id) DO NOTHING;
        IF TG_LEVEL = 'ROW' THEN  -- later rows of such a table: done already
            PERFORM set_config('ensign.config_orgs', marked || row_org::text || ',', true);
        END IF;
    ELSIF row_org IS NOT NULL THEN
        INSERT INTO config_org_generation AS g (org_id, generation)
        VALUES (row_org, new_generation)
        ON CONFLICT (org_id) DO UPDATE SET generation = EXCLUDED.generation;
        PERFORM set_config('ensign.config_orgs', marked || row_org::text || ',', true);
    END IF;
    RETURN NULL;
END
$$;
