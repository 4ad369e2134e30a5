-- 0018_change_cost.sql - a change costs what it touched on the database
-- side: the generation trigger is linear in the rows a transaction changes
-- (it was quadratic in the organizations it touched), and the refresher's
-- per-organization read goes through indexes (doc/choices.md, "The
-- database side of a change").
--
-- Invariants kept here (the same as 0007_propagation.sql's):
-- - config_generation moves by exactly one per transaction that changes
--   what evaluation reads, and NOTIFY ensign_config carries the new
--   generation.
-- - config_org_generation.generation of an organization is the
--   config_generation of the last transaction that changed one of its rows
--   that evaluation reads; a row of a feeding table without org_id (the
--   nil uuid from ensign_config_row_org) and TRUNCATE stamp every
--   organization.
--
-- How each row stays O(1): a transaction's new generation is its own (it
-- holds the row lock of config_generation until it commits), so
-- "organization already stamped by this transaction" is exactly
-- "config_org_generation.generation = this transaction's generation": the
-- table itself is the per-transaction set, probed through its primary key.
-- Before the probe, a row of the same organization as the row before it
-- (the common case: one flag's rows, one organization's environments) is
-- skipped on a comparison with the transaction-local setting
-- ensign.config_last_org. The generation itself is kept in the
-- transaction-local setting ensign.config_generation, so a later row does
-- not read config_generation again. Settings made with set_config(..., true)
-- end with the transaction and are undone with a rolled-back savepoint, like
-- the update they describe.

CREATE OR REPLACE FUNCTION ensign_bump_config_generation() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    new_generation bigint := nullif(current_setting('ensign.config_generation', true), '')::bigint;
    row_org uuid;
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        IF TG_OP = 'DELETE' THEN
            row_org := ensign_config_row_org(TG_TABLE_NAME, OLD);
        ELSE
            row_org := ensign_config_row_org(TG_TABLE_NAME, NEW);
        END IF;
        IF new_generation IS NOT NULL
           AND (row_org::text = current_setting('ensign.config_last_org', true)
                OR (row_org = '00000000-0000-0000-0000-000000000000'
                    AND current_setting('ensign.config_all_orgs', true) = 'on')) THEN
            RETURN NULL;
        END IF;
    END IF;
    IF new_generation IS NULL THEN
        UPDATE config_generation SET generation = generation + 1 WHERE id = 1
            RETURNING generation INTO new_generation;
        PERFORM set_config('ensign.config_generation', new_generation::text, true);
        PERFORM pg_notify('ensign_config', new_generation::text);
    END IF;
    IF TG_LEVEL = 'STATEMENT' OR row_org = '00000000-0000-0000-0000-000000000000' THEN
        UPDATE config_org_generation SET generation = new_generation
         WHERE generation <> new_generation;
        INSERT INTO config_org_generation (org_id, generation)
        SELECT id, new_generation FROM orgs
        ON CONFLICT (org_id) DO NOTHING;
        IF TG_LEVEL = 'ROW' THEN  -- later rows of such a table: done already
            PERFORM set_config('ensign.config_all_orgs', 'on', true);
        END IF;
    ELSIF row_org IS NOT NULL THEN
        INSERT INTO config_org_generation AS g (org_id, generation)
        VALUES (row_org, new_generation)
        ON CONFLICT (org_id) DO UPDATE SET generation = EXCLUDED.generation
            WHERE g.generation <> EXCLUDED.generation;
        PERFORM set_config('ensign.config_last_org', row_org::text, true);
    END IF;
    RETURN NULL;
END
$$;
