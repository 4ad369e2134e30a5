-- management.sql - the management benchmark's data (contrib/bench), for the
-- organization named by the psql variable org: 1,000 boolean flags with
-- their on/off variants, a configuration in every environment and a day of
-- usage counters each (so every list item carries usage), and the flag
-- `twenty` whose production environment has 20 rules.
BEGIN;

INSERT INTO flags (org_id, key, name, type, tags)
SELECT o.id, 'bench-' || lpad(i::text, 4, '0'), 'Bench flag ' || i, 'boolean', '{bench}'
FROM orgs o, generate_series(0, 998) AS i
WHERE o.slug = :'org';

INSERT INTO flags (org_id, key, name, type)
SELECT id, 'twenty', 'Twenty rules', 'boolean' FROM orgs WHERE slug = :'org';

INSERT INTO variants (flag_id, key, value, sort_order)
SELECT f.id, v.key, v.value, v.n
FROM flags f JOIN orgs o ON o.id = f.org_id,
     (VALUES ('on', 'true'::jsonb, 0), ('off', 'false'::jsonb, 1)) AS v(key, value, n)
WHERE o.slug = :'org';

INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, e.key = 'production', '{"variant": "on"}', 'off'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
WHERE o.slug = :'org';

INSERT INTO rules (flag_id, environment_id, priority, description, conditions, serve)
SELECT f.id, e.id, i, 'rule ' || i,
       jsonb_build_array(jsonb_build_object('attribute', 'country', 'operator', 'in',
                                            'values', jsonb_build_array('C' || i, 'D' || i))),
       '{"variant": "off"}'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id,
     generate_series(0, 19) AS i
WHERE o.slug = :'org' AND f.key = 'twenty' AND e.key = 'production';

INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count, last_seen_at)
SELECT f.id, e.id, 'on', date_trunc('hour', now()) - h * interval '1 hour', 10 + h, now()
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id,
     generate_series(0, 23) AS h
WHERE o.slug = :'org' AND e.key = 'production';

COMMIT;
