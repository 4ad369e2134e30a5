-- 0024_variant_rule_org.sql - variants and rules carry their flag's
-- organization, so that the snapshot source reads a batch of organizations'
-- variants and rules by organization instead of one index descent per flag
-- (doc/choices.md, "Variants and rules by organization").
--
-- Invariants:
-- - variants.org_id and rules.org_id equal the org_id of the row's flag,
--   always: a composite foreign key (flag_id, org_id) references
--   flags (id, org_id), so the database refuses a row that disagrees (and
--   a flag's org_id that would leave its rows behind). It replaces the
--   variants' foreign key on flag_id alone (the same check, one index
--   descent, and the same ON DELETE CASCADE); rules keep theirs on
--   flag_environments and gain this one.
-- - Every writer supplies org_id (src/api/flags.c, variants.c, rules.c,
--   ensign_rules_put below, the bench's SQL); no default, no trigger.
-- - variants_org_flag and rules_org_flag serve the snapshot source's batch
--   read (`org_id = ANY($1)`) and its chunk reads (one organization, a
--   range of its flags).

-- The back-fill changes nothing evaluation reads: the user triggers of the
-- two tables (the generation bump, deferred, and the flags' roll-ups) stay
-- off for it, so that no trigger event is pending when the tables are
-- altered after it (PostgreSQL refuses ALTER TABLE then).
ALTER TABLE variants DISABLE TRIGGER USER;
ALTER TABLE rules DISABLE TRIGGER USER;

ALTER TABLE flags ADD CONSTRAINT flags_id_org_key UNIQUE (id, org_id);

ALTER TABLE variants ADD COLUMN org_id uuid;
UPDATE variants v SET org_id = f.org_id FROM flags f WHERE f.id = v.flag_id;
ALTER TABLE variants ALTER COLUMN org_id SET NOT NULL;
ALTER TABLE variants DROP CONSTRAINT variants_flag_id_fkey;
ALTER TABLE variants ADD CONSTRAINT variants_flag_org_fkey FOREIGN KEY (flag_id, org_id)
    REFERENCES flags (id, org_id) ON DELETE CASCADE;
CREATE INDEX variants_org_flag ON variants (org_id, flag_id);

ALTER TABLE rules ADD COLUMN org_id uuid;
UPDATE rules r SET org_id = f.org_id FROM flags f WHERE f.id = r.flag_id;
ALTER TABLE rules ALTER COLUMN org_id SET NOT NULL;
ALTER TABLE rules ADD CONSTRAINT rules_flag_org_fkey FOREIGN KEY (flag_id, org_id)
    REFERENCES flags (id, org_id) ON DELETE CASCADE;
CREATE INDEX rules_org_flag ON rules (org_id, flag_id);

ALTER TABLE variants ENABLE TRIGGER USER;
ALTER TABLE rules ENABLE TRIGGER USER;

-- As in 0013, with the rules' organization taken from their flag.
CREATE OR REPLACE FUNCTION ensign_rules_put(flag uuid, env uuid, wanted jsonb, keep_ids boolean)
    RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    current jsonb := ensign_rules_state(flag, env);
BEGIN
    IF keep_ids AND current = wanted THEN
        RETURN NULL;
    END IF;
    DELETE FROM rules WHERE flag_id = flag AND environment_id = env;
    -- created_at a microsecond apart: rules of one priority stay in order
    INSERT INTO rules (id, flag_id, org_id, environment_id, priority, description, conditions,
                       serve, created_at)
    SELECT CASE WHEN keep_ids THEN (x.r ->> 'id')::uuid ELSE gen_random_uuid() END, flag,
           (SELECT f.org_id FROM flags f WHERE f.id = flag), env,
           (x.r ->> 'priority')::bigint, x.r ->> 'description', x.r -> 'conditions',
           x.r -> 'serve', now() + x.ord * interval '1 microsecond'
      FROM jsonb_array_elements(wanted) WITH ORDINALITY AS x(r, ord);
    RETURN 'rules: ' || jsonb_array_length(current) || ' → ' || jsonb_array_length(wanted);
END
$$;
