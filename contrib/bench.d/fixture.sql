-- fixture.sql - the benchmark's flags (contrib/bench), for the organization
-- named by the psql variable org: in production 20 string flags flag-00 ..
-- flag-19, each with variants a, b, c, a 50/50 rollout of a and b as the
-- default serve, and three rules that the benchmark context (country DE,
-- plan enterprise, version 2.4.1, email jane@example.com) does not match,
-- so every evaluation walks all of them; in development the flag `moving`
-- (variants a, b; one rule) that the propagation and write-load runs change.
-- Written with SQL rather than the API so the benchmark sets up in a
-- second; its write load goes through the API (writes.py).
BEGIN;

INSERT INTO flags (org_id, key, name, type)
SELECT o.id, 'flag-' || lpad(i::text, 2, '0'), 'Flag ' || i, 'string'
FROM orgs o, generate_series(0, 19) AS i
WHERE o.slug = :'org';

INSERT INTO flags (org_id, key, name, type)
SELECT id, 'moving', 'Moving', 'string' FROM orgs WHERE slug = :'org';

INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, to_jsonb('value-' || v.key), v.n
FROM flags f JOIN orgs o ON o.id = f.org_id,
     (VALUES ('a', 0), ('b', 1), ('c', 2)) AS v(key, n)
WHERE o.slug = :'org' AND (f.key LIKE 'flag-%' OR v.key <> 'c');

INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, true,
       '{"rollout": [{"variant": "a", "weight": 50}, {"variant": "b", "weight": 50}]}', 'c'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
WHERE o.slug = :'org' AND f.key LIKE 'flag-%' AND e.key = 'production';

INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions, serve)
SELECT fe.flag_id, f.org_id, fe.environment_id, r.priority, r.conditions::jsonb, r.serve::jsonb
FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id JOIN orgs o ON o.id = f.org_id,
     (VALUES
        (1, '[{"attribute": "country", "operator": "in", "values": ["NL", "BE", "LU"]}]',
         '{"variant": "b"}'),
        (2, '[{"attribute": "plan", "operator": "eq", "values": ["enterprise"]},
              {"attribute": "version", "operator": "semver_gte", "values": ["3.0.0"]}]',
         '{"variant": "c"}'),
        (3, '[{"attribute": "email", "operator": "ends_with", "values": ["@example.org"]}]',
         '{"rollout": [{"variant": "b", "weight": 1}, {"variant": "c", "weight": 1}]}')
     ) AS r(priority, conditions, serve)
WHERE o.slug = :'org';

INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, true, '{"variant": "a"}', 'b'
FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
WHERE o.slug = :'org' AND f.key = 'moving' AND e.key = 'development';

INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions, serve)
SELECT fe.flag_id, f.org_id, fe.environment_id, 0,
       '[{"attribute": "country", "operator": "eq", "values": ["XX"]}]', '{"variant": "b"}'
FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id JOIN orgs o ON o.id = f.org_id
WHERE o.slug = :'org' AND f.key = 'moving';

INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix, last_four)
SELECT o.id, e.id, 'bench ' || e.key, k.digest, 'svc_sdk_', 'xxxx'
FROM orgs o JOIN environments e ON e.org_id = o.id,
     (VALUES ('production', :'prod_digest'), ('development', :'dev_digest')) AS k(env, digest)
WHERE o.slug = :'org' AND e.key = k.env;

COMMIT;
