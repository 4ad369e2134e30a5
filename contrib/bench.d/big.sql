-- big.sql - 100,000 more flags for the snapshot-size run of contrib/bench:
-- a new organization `big` whose production environment holds boolean
-- flags big-000000 .. big-099999, each with its on/off variants, enabled,
-- and one rule.
BEGIN;

INSERT INTO orgs (name, slug) VALUES ('Big', 'big');

INSERT INTO flags (org_id, key, name, type)
SELECT o.id, 'big-' || lpad(i::text, 6, '0'), 'Big ' || i, 'boolean'
FROM orgs o, generate_series(0, 99999) AS i
WHERE o.slug = 'big';

INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, v.value::jsonb, v.n
FROM flags f JOIN orgs o ON o.id = f.org_id,
     (VALUES ('on', 'true', 0), ('off', 'false', 1)) AS v(key, value, n)
WHERE o.slug = 'big';

INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, true, '{"variant": "off"}', 'off'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
WHERE o.slug = 'big' AND e.key = 'production';

INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions, serve)
SELECT fe.flag_id, f.org_id, fe.environment_id, 0,
       '[{"attribute": "country", "operator": "in", "values": ["NL", "BE"]}]', '{"variant": "on"}'
FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id JOIN orgs o ON o.id = f.org_id
WHERE o.slug = 'big';

COMMIT;
