-- management.sql - the management benchmark's data (contrib/bench), for the
-- organization named by the psql variable org: 1,000 boolean flags with
-- their on/off variants, a configuration in every environment and a day of
-- usage counters each (so every list item carries usage), the flag
-- `twenty` whose production environment has 20 rules (the PATCH case), and
-- for the detail cases `detail-5` and `detail-500`, 20 rules each and 5 or
-- 500 revisions (detail shows the newest 20: its cost must not grow with
-- the history).
BEGIN;

INSERT INTO flags (org_id, key, name, type, tags)
SELECT o.id, 'bench-' || lpad(i::text, 4, '0'), 'Bench flag ' || i, 'boolean', '{bench}'
FROM orgs o, generate_series(0, 996) AS i
WHERE o.slug = :'org';

INSERT INTO flags (org_id, key, name, type)
SELECT id, k, 'Twenty rules', 'boolean'
FROM orgs, unnest(ARRAY['twenty', 'detail-5', 'detail-500']) AS k WHERE slug = :'org';

INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, v.value, v.n
FROM flags f JOIN orgs o ON o.id = f.org_id,
     (VALUES ('on', 'true'::jsonb, 0), ('off', 'false'::jsonb, 1)) AS v(key, value, n)
WHERE o.slug = :'org';

INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, e.key = 'production', '{"variant": "on"}', 'off'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
WHERE o.slug = :'org';

INSERT INTO rules (flag_id, org_id, environment_id, priority, description, conditions, serve)
SELECT f.id, f.org_id, e.id, i, 'rule ' || i,
       jsonb_build_array(jsonb_build_object('attribute', 'country', 'operator', 'in',
                                            'values', jsonb_build_array('C' || i, 'D' || i))),
       '{"variant": "off"}'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id,
     generate_series(0, 19) AS i
WHERE o.slug = :'org' AND f.key IN ('twenty', 'detail-5', 'detail-500')
  AND e.key = 'production';

INSERT INTO revisions (flag_id, environment_id, action, summary, changes, user_name, created_at)
SELECT f.id, e.id, 'rule.updated', 'Updated a rule in Production',
       ARRAY['description: rule ' || i || ' → rule ' || (i + 1)], 'Bench',
       now() - (500 - i) * interval '1 minute'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id,
     generate_series(1, 500) AS i
WHERE o.slug = :'org' AND e.key = 'production'
  AND ((f.key = 'detail-5' AND i <= 5) OR f.key = 'detail-500');

INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count, last_seen_at)
SELECT f.id, e.id, 'on', date_trunc('hour', now()) - h * interval '1 hour', 10 + h, now()
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id,
     generate_series(0, 23) AS h
WHERE o.slug = :'org' AND e.key = 'production';

COMMIT;

-- The steady state: planner statistics as autovacuum would have them a
-- minute later (without them the first minutes plan the list as nested
-- loops over what looks like empty tables, and autovacuum's ANALYZE in the
-- middle of a run changes the figures between rounds), and tables without
-- this script's own leftovers: the 24 hours per flag above are one
-- transaction, so the usage roll-up triggers wrote 24 versions of each
-- flag's flag_usage_series row that no page pruning could reuse (800
-- pages for 1,000 rows, a third of the list's execution), where the
-- flusher's separate transactions leave a compact table.
VACUUM (FULL, ANALYZE);
