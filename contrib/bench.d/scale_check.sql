-- scale_check.sql - the invariants the API keeps, checked over the data set
-- of scale.sql (organizations scale-*): prints one line per check with the
-- rows that break it, then fails (ON_ERROR_STOP) when any does. Each check
-- is what a trigger or handler would have written had the API made the
-- rows (sql/0001 .. 0015); tests/e2e/test_bench_scale.py and contrib/bench
-- part scale run it after loading.
\set ON_ERROR_STOP 1
CREATE TEMP TABLE scale_violations AS
WITH so AS (SELECT * FROM orgs WHERE slug LIKE 'scale-%'),
     sf AS (SELECT f.* FROM flags f JOIN so ON so.id = f.org_id)
SELECT 'three default environments per organization' AS invariant,
       (SELECT count(*) FROM so
         WHERE (SELECT array_agg(e.key || ':' || e.sort_order ORDER BY e.sort_order)
                  FROM environments e WHERE e.org_id = so.id)
               IS DISTINCT FROM ARRAY['production:0', 'preview:1', 'development:2']) AS broken
UNION ALL
SELECT 'an owner in every organization',
       (SELECT count(*) FROM so WHERE NOT EXISTS (SELECT 1 FROM org_members m
                                                  WHERE m.org_id = so.id AND m.role = 'owner'))
UNION ALL
SELECT 'a flag_environments row for every flag and environment of its organization',
       (SELECT count(*) FROM sf JOIN environments e ON e.org_id = sf.org_id
         WHERE NOT EXISTS (SELECT 1 FROM flag_environments fe
                           WHERE fe.flag_id = sf.id AND fe.environment_id = e.id))
UNION ALL
SELECT 'no flag_environments row in another organization''s environment',
       (SELECT count(*) FROM sf JOIN flag_environments fe ON fe.flag_id = sf.id
          JOIN environments e ON e.id = fe.environment_id WHERE e.org_id <> sf.org_id)
UNION ALL
SELECT 'default serve, off variant and rule serves name variants of the flag',
       (SELECT count(*) FROM sf JOIN flag_environments fe ON fe.flag_id = sf.id
         WHERE NOT EXISTS (SELECT 1 FROM variants v WHERE v.flag_id = sf.id
                                                      AND v.key = fe.default_serve ->> 'variant')
            OR NOT EXISTS (SELECT 1 FROM variants v WHERE v.flag_id = sf.id
                                                      AND v.key = fe.off_variant_key))
     + (SELECT count(*) FROM sf JOIN rules r ON r.flag_id = sf.id
         WHERE NOT EXISTS (SELECT 1 FROM variants v WHERE v.flag_id = sf.id
                                                      AND v.key = r.serve ->> 'variant'))
UNION ALL
SELECT 'variant values match the flag type, variant_seq counts them',
       (SELECT count(*) FROM sf JOIN variants v ON v.flag_id = sf.id
         WHERE jsonb_typeof(v.value) <> CASE sf.type WHEN 'boolean' THEN 'boolean'
                                                     WHEN 'string' THEN 'string'
                                                     WHEN 'number' THEN 'number'
                                                     ELSE jsonb_typeof(v.value) END)
     + (SELECT count(*) FROM sf
         WHERE sf.variant_seq <> (SELECT count(*) FROM variants v WHERE v.flag_id = sf.id))
UNION ALL
SELECT 'flags.tags_json, production_value and enabled_in_json as their triggers keep them',
       (SELECT count(*) FROM sf
         WHERE sf.tags_json IS DISTINCT FROM to_jsonb(sf.tags)::text
            OR sf.production_value IS DISTINCT FROM ensign_production_value(sf.id)
            OR sf.enabled_in_json IS DISTINCT FROM ensign_flag_enabled_in(sf.id))
UNION ALL
SELECT 'rolled_out_since set exactly on enabled single serves without rules',
       (SELECT count(*) FROM sf JOIN flag_environments fe ON fe.flag_id = sf.id
         WHERE (fe.rolled_out_since IS NOT NULL)
               <> (fe.enabled AND ensign_sole_variant(fe.default_serve) IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM rules r WHERE r.flag_id = fe.flag_id
                                                         AND r.environment_id = fe.environment_id)))
     + (SELECT count(*) FROM sf
         WHERE sf.rolled_out_since IS DISTINCT FROM
               (SELECT CASE WHEN bool_and(fe.rolled_out_since IS NOT NULL)
                            THEN max(fe.rolled_out_since) END
                  FROM flag_environments fe WHERE fe.flag_id = sf.id AND fe.enabled))
UNION ALL
SELECT 'SDK keys: digest, prefix and last four of a svc_sdk_ key of 43 base62 characters',
       (SELECT count(*) FROM sdk_keys k JOIN so ON so.id = k.org_id
         WHERE k.prefix <> 'svc_sdk_Scal' OR k.last_four <> 'xxxx'
            OR k.environment_id IS NULL OR k.revoked_at IS NOT NULL)
UNION ALL
SELECT 'a config_org_generation row per organization, not above config_generation',
       (SELECT count(*) FROM so
         WHERE NOT EXISTS (SELECT 1 FROM config_org_generation g, config_generation c
                           WHERE g.org_id = so.id AND g.generation <= c.generation))
UNION ALL
SELECT 'each loaded organization recorded whole at its generation (no flag-level rows needed)',
       (SELECT count(*) FROM so
         WHERE NOT EXISTS (SELECT 1 FROM config_org_generation g
                           WHERE g.org_id = so.id AND g.whole_generation = g.generation))
UNION ALL
SELECT 'variants and rules carry their flag''s organization (sql/0024)',
       (SELECT count(*) FROM sf JOIN variants v ON v.flag_id = sf.id WHERE v.org_id <> sf.org_id)
     + (SELECT count(*) FROM sf JOIN rules r ON r.flag_id = sf.id WHERE r.org_id <> sf.org_id)
UNION ALL
-- scale.sql writes what these triggers would have; a trigger added to one
-- of the loaded tables must be written there too, and named here.
SELECT 'the loaded tables have the user triggers scale.sql stands in for',
       (SELECT count(*) FROM
          ((SELECT t.tgrelid::regclass || '.' || t.tgname FROM pg_trigger t
             WHERE NOT t.tgisinternal
               AND t.tgrelid IN ('orgs'::regclass, 'environments'::regclass, 'flags'::regclass,
                                 'variants'::regclass, 'flag_environments'::regclass,
                                 'rules'::regclass, 'sdk_keys'::regclass))
           EXCEPT
           SELECT unnest(ARRAY[
               'orgs.orgs_default_environments', 'environments.environments_configure_flags',
               'flags.flags_tags_json', 'flags.flags_cancel_schedules',
               'flags.flags_forget_unknown', 'variants.variants_production_value',
               'flag_environments.flag_environments_production_value',
               'flag_environments.flag_environments_rolled_out',
               'flag_environments.flag_environments_flag_rolled_out',
               'flag_environments.flag_environments_flag_rolled_out_update',
               'flag_environments.flag_environments_enabled_in_insert',
               'flag_environments.flag_environments_enabled_in_delete',
               'flag_environments.flag_environments_enabled_in_update',
               'rules.rules_rolled_out_insert', 'rules.rules_rolled_out_delete',
               'environments.config_generation_bump', 'flags.config_generation_bump',
               'variants.config_generation_bump', 'flag_environments.config_generation_bump',
               'rules.config_generation_bump', 'sdk_keys.config_generation_bump',
               'sdk_keys.config_generation_bump_update', 'environments.config_generation_truncate',
               'flags.config_generation_truncate', 'variants.config_generation_truncate',
               'flag_environments.config_generation_truncate',
               'rules.config_generation_truncate', 'sdk_keys.config_generation_truncate'])) AS unknown)
UNION ALL
SELECT 'user triggers of the loaded tables enabled again',
       (SELECT count(*) FROM pg_trigger t
         WHERE NOT t.tgisinternal AND t.tgenabled = 'D'
           AND t.tgrelid IN ('orgs'::regclass, 'environments'::regclass, 'flags'::regclass,
                             'variants'::regclass, 'flag_environments'::regclass,
                             'rules'::regclass, 'sdk_keys'::regclass));

SELECT invariant, broken FROM scale_violations;
SELECT (SELECT count(*) FROM orgs WHERE slug LIKE 'scale-%') AS orgs,
       (SELECT count(*) FROM flags f JOIN orgs o ON o.id = f.org_id
         WHERE o.slug LIKE 'scale-%') AS flags,
       (SELECT count(*) FROM rules r JOIN flags f ON f.id = r.flag_id JOIN orgs o ON o.id = f.org_id
         WHERE o.slug LIKE 'scale-%') AS rules,
       (SELECT count(*) FROM sdk_keys k JOIN orgs o ON o.id = k.org_id
         WHERE o.slug LIKE 'scale-%') AS sdk_keys;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM scale_violations WHERE broken > 0) THEN
        RAISE EXCEPTION 'scale_check: an invariant does not hold';
    END IF;
END
$$;
DROP TABLE scale_violations;
