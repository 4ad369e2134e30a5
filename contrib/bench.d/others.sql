-- others.sql - 100,000 flags in four other organizations, for the
-- propagation part of contrib/bench: organizations other-1 .. other-4, each
-- with 25,000 boolean flags other-NNNNN configured in all three of its
-- environments (300,000 flag configurations in all, what the API would
-- make), enabled in production with one rule there. other-1 also gets the
-- flag `moving` of fixture.sql, enabled in development (variants a, b; one
-- rule there), and a development SDK key whose digest is the psql variable
-- dev_digest, so the benchmark can change a flag of a large organization
-- too. Written with SQL (seconds) rather than the API (minutes).
BEGIN;

INSERT INTO orgs (name, slug)
SELECT 'Other ' || n, 'other-' || n FROM generate_series(1, 4) AS n;

INSERT INTO flags (org_id, key, name, type)
SELECT o.id, 'other-' || lpad(i::text, 5, '0'), 'Other ' || i, 'boolean'
FROM orgs o, generate_series(0, 24999) AS i
WHERE o.slug LIKE 'other-_';

INSERT INTO flags (org_id, key, name, type)
SELECT id, 'moving', 'Moving', 'string' FROM orgs WHERE slug = 'other-1';

INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, v.value::jsonb, v.n
FROM flags f JOIN orgs o ON o.id = f.org_id,
     (VALUES ('on', 'true', 0), ('off', 'false', 1)) AS v(key, value, n)
WHERE o.slug LIKE 'other-_' AND f.key <> 'moving';

INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, to_jsonb('value-' || v.key), v.n
FROM flags f JOIN orgs o ON o.id = f.org_id, (VALUES ('a', 0), ('b', 1)) AS v(key, n)
WHERE o.slug = 'other-1' AND f.key = 'moving';

-- The environments' trigger configured nothing (the flags came later):
-- every flag gets its configuration in every environment here.
INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, e.key = 'production' OR f.key = 'moving',
       CASE WHEN f.key = 'moving' THEN '{"variant": "a"}' ELSE '{"variant": "on"}' END::jsonb,
       CASE WHEN f.key = 'moving' THEN 'b' ELSE 'off' END
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
WHERE o.slug LIKE 'other-_';

INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions, serve)
SELECT fe.flag_id, f.org_id, fe.environment_id, 0,
       '[{"attribute": "country", "operator": "in", "values": ["NL", "BE"]}]', '{"variant": "off"}'
FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id
     JOIN environments e ON e.id = fe.environment_id JOIN orgs o ON o.id = f.org_id
WHERE o.slug LIKE 'other-_' AND e.key = 'production' AND f.key <> 'moving';

INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions, serve)
SELECT fe.flag_id, f.org_id, fe.environment_id, 0,
       '[{"attribute": "country", "operator": "eq", "values": ["XX"]}]', '{"variant": "b"}'
FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id
     JOIN environments e ON e.id = fe.environment_id JOIN orgs o ON o.id = f.org_id
WHERE o.slug = 'other-1' AND e.key = 'development' AND f.key = 'moving';

INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix, last_four)
SELECT o.id, e.id, 'bench development', :'dev_digest', 'svc_sdk_', 'xxxx'
FROM orgs o JOIN environments e ON e.org_id = o.id
WHERE o.slug = 'other-1' AND e.key = 'development';

COMMIT;
