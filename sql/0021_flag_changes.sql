-- 0021_flag_changes.sql - which flags of an organization a change touched,
-- so that the snapshot of a large organization can be rebuilt a chunk of
-- flags at a time instead of whole (doc/choices.md, "Chunks of a large
-- organization: what a change touched").
--
-- Invariants kept here (those of 0007_propagation.sql and
-- 0018_change_cost.sql, unchanged): config_generation moves by exactly one
-- per transaction that changes what evaluation reads, NOTIFY ensign_config
-- carries it, and config_org_generation.generation of an organization is
-- the generation of the last transaction that changed one of its rows that
-- evaluation reads.
--
-- Invariants added:
-- - config_org_generation.whole_generation of an organization is the
--   generation of the last transaction that changed one of its rows that
--   is not a flag's own: segments, entities, entity attributes,
--   environments, a row of a feeding table not known here, TRUNCATE of any
--   feeding table (every organization), and the first record of an
--   organization (a new row). Such a change may alter every flag's
--   compiled form, so a reader must rebuild the organization whole when
--   whole_generation is past what it holds.
-- - config_flag_generation (org_id, flag_key) holds, for every flag key a
--   transaction touched through a row of flags, variants, flag_environments
--   or rules, that transaction's generation (the last one wins). A flag is
--   named by its key, not its id, because a deleted flag's rows are gone at
--   commit and a reader keeps flags in key order. Rows of deleted flags and
--   organizations stay (no foreign key, as config_org_generation's): a
--   reader holding generation G learns every flag key changed since with
--   `org_id = $1 AND generation > G`.
-- - SDK keys change the organization's generation only (they live in the
--   index, not in the flags' files): neither whole nor a flag.
-- - A child row (variant, flag configuration, rule) whose flag is already
--   gone at commit records nothing: the flag's own row (deleted in the same
--   transaction) recorded its key, as it recorded its organization.
--
-- Cost per row stays O(1) (0018's reasoning): a row of the same flag as the
-- row before it returns after one comparison with the transaction-local
-- setting ensign.config_last_flag; a row of an organization already stamped
-- whole by this transaction (ensign.config_whole_org, the last such one)
-- records no flag, since the reader rebuilds that organization whole anyway;
-- otherwise one upsert probed through a primary key, as the organization's.
--
-- flags_org_key_bytes: the reader reads a chunk's flags as a range of keys
-- in byte order (the snapshot's order, strcmp), which the unique index on
-- (org_id, key) gives only when the database's collation is C.

ALTER TABLE config_org_generation ADD COLUMN whole_generation bigint NOT NULL DEFAULT 0;
UPDATE config_org_generation SET whole_generation = generation;

CREATE TABLE config_flag_generation (
    org_id     uuid NOT NULL,
    flag_key   text NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (org_id, flag_key)
);
CREATE INDEX config_flag_generation_org_generation
    ON config_flag_generation (org_id, generation);

CREATE INDEX flags_org_key_bytes ON flags (org_id, key COLLATE "C");

-- Stamps org with new_generation; whole also as whole_generation. A new
-- row is always whole (nothing earlier recorded which flags moved).
CREATE FUNCTION ensign_config_stamp_org(org uuid, new_generation bigint, whole boolean)
    RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF whole THEN
        INSERT INTO config_org_generation AS g (org_id, generation, whole_generation)
        VALUES (org, new_generation, new_generation)
        ON CONFLICT (org_id) DO UPDATE
            SET generation = EXCLUDED.generation, whole_generation = EXCLUDED.whole_generation
            WHERE g.whole_generation <> EXCLUDED.whole_generation;
    ELSE
        INSERT INTO config_org_generation AS g (org_id, generation, whole_generation)
        VALUES (org, new_generation, new_generation)
        ON CONFLICT (org_id) DO UPDATE SET generation = EXCLUDED.generation
            WHERE g.generation <> EXCLUDED.generation;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ensign_bump_config_generation() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    new_generation bigint := nullif(current_setting('ensign.config_generation', true), '')::bigint;
    r record;
    row_org uuid;
    row_key text;      -- the key of the row's flag (rows of flags and their children)
    old_key text;      -- a renamed flag's former key
    whole boolean := false;
    flag_mark text;
    stamped bigint;    -- the generation row_key is recorded at
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        IF TG_OP = 'DELETE' THEN
            r := OLD;
        ELSE
            r := NEW;
        END IF;
        -- separate statements: a field is resolved only on the tables having it
        IF TG_TABLE_NAME IN ('variants', 'flag_environments', 'rules') THEN
            SELECT f.org_id, f.key INTO row_org, row_key FROM flags f WHERE f.id = r.flag_id;
        ELSIF TG_TABLE_NAME = 'flags' THEN
            row_org := r.org_id;
            row_key := r.key;
            IF TG_OP = 'UPDATE' THEN
                IF OLD.key <> NEW.key THEN
                    old_key := OLD.key;  -- a renamed flag leaves its old key's chunk
                END IF;
            END IF;
        ELSIF TG_TABLE_NAME = 'sdk_keys' THEN
            row_org := r.org_id;
        ELSE
            row_org := ensign_config_row_org(TG_TABLE_NAME, r);
            whole := true;
        END IF;
        flag_mark := row_org::text || ' ' || row_key;
        IF new_generation IS NOT NULL THEN
            IF row_org IS NULL THEN
                RETURN NULL;  -- its flag or entity is gone: that row's own firing recorded it
            END IF;
            IF row_key IS NOT NULL THEN
                IF old_key IS NULL
                   AND (flag_mark = current_setting('ensign.config_last_flag', true)
                        OR row_org::text = current_setting('ensign.config_whole_org', true)) THEN
                    RETURN NULL;
                END IF;
            ELSIF whole THEN
                IF row_org::text = current_setting('ensign.config_whole_org', true)
                   OR (row_org = '00000000-0000-0000-0000-000000000000'
                       AND current_setting('ensign.config_all_orgs', true) = 'on') THEN
                    RETURN NULL;
                END IF;
            ELSIF row_org::text = current_setting('ensign.config_last_org', true) THEN
                RETURN NULL;
            END IF;
        END IF;
    END IF;
    IF new_generation IS NULL THEN
        UPDATE config_generation SET generation = generation + 1 WHERE id = 1
            RETURNING generation INTO new_generation;
        PERFORM set_config('ensign.config_generation', new_generation::text, true);
        PERFORM pg_notify('ensign_config', new_generation::text);
    END IF;
    IF TG_LEVEL = 'STATEMENT' OR row_org = '00000000-0000-0000-0000-000000000000' THEN
        UPDATE config_org_generation
           SET generation = new_generation, whole_generation = new_generation
         WHERE whole_generation <> new_generation;
        INSERT INTO config_org_generation (org_id, generation, whole_generation)
        SELECT id, new_generation, new_generation FROM orgs
        ON CONFLICT (org_id) DO NOTHING;
        IF TG_LEVEL = 'ROW' THEN  -- later rows of such a table: done already
            PERFORM set_config('ensign.config_all_orgs', 'on', true);
        END IF;
        RETURN NULL;
    END IF;
    IF row_org IS NULL THEN
        RETURN NULL;
    END IF;
    IF whole THEN
        PERFORM ensign_config_stamp_org(row_org, new_generation, true);
        PERFORM set_config('ensign.config_whole_org', row_org::text, true);
    ELSIF row_org::text IS DISTINCT FROM current_setting('ensign.config_last_org', true) THEN
        PERFORM ensign_config_stamp_org(row_org, new_generation, false);
    END IF;
    PERFORM set_config('ensign.config_last_org', row_org::text, true);
    IF row_key IS NOT NULL
       AND row_org::text IS DISTINCT FROM current_setting('ensign.config_whole_org', true) THEN
        -- a plain probe first: ON CONFLICT DO UPDATE locks the row it finds
        -- even when its WHERE then declines the update. The probe names the
        -- primary key's columns only: with the generation in it too, a plan
        -- made while the table was small can take the (org_id, generation)
        -- index, which every row of a bulk write shares (quadratic).
        SELECT f.generation INTO stamped FROM config_flag_generation f
         WHERE f.org_id = row_org AND f.flag_key = row_key;
        IF old_key IS NOT NULL OR stamped IS DISTINCT FROM new_generation THEN
            INSERT INTO config_flag_generation AS f (org_id, flag_key, generation)
            SELECT row_org, k, new_generation FROM unnest(ARRAY[row_key, old_key]) AS k
             WHERE k IS NOT NULL
            ON CONFLICT (org_id, flag_key) DO UPDATE SET generation = EXCLUDED.generation
                WHERE f.generation <> EXCLUDED.generation;
        END IF;
        PERFORM set_config('ensign.config_last_flag', flag_mark, true);
    END IF;
    RETURN NULL;
END
$$;
