-- scale.sql - the data set of contrib/bench part scale: many organizations
-- of mostly small flag sets and a few large ones, written with SQL in one
-- transaction (minutes for a million flags, where the API would take
-- hours). psql variables:
--   orgs   organizations scale-00001 .. (10,000 for SCALE=full)
--   big    flags of scale-00001 (100,000 for SCALE=full)
--   owner  email of an existing user, made owner of every organization
-- Organization sizes, in flags (each has the flag `moving`):
--   scale-00001  big            (the large organization)
--   scale-00002  big / 4        scale-00003  big * 3 / 10
--   scale-00004  big * 4 / 10   scale-00005  big / 2
--   scale-00006  2,000          scale-00007  350
--   scale-00008  20             (the small organization the bench changes)
--   the others   30 + (n * 37) % 89, that is 30 to 118, about 74 on average
-- Every flag is configured in the three environments, as the API makes a
-- flag: production enabled with a single default serve and no rule;
-- preview disabled (the API's defaults); development enabled with one
-- rule. `moving` is a string flag (variants a, b; default a, rule
-- country eq XX serves b: propagation.py's flag); flag-NNNNNN is
-- boolean (variants on, off; default on for even N, off for odd; the rule
-- country in [NL, BE] serves the other one). So one rule per flag.
-- SDK keys, known to the bench by their number (scale.py key):
--   svc_sdk_ || rpad('ScaleDev' || lpad(n, 6, '0'), 43, 'x')  development, every organization
--   svc_sdk_ || rpad('ScalePrd' || lpad(n, 6, '0'), 43, 'x')  production, organizations 1, 2, 8
-- stored as token.c stores them (SHA-256 hex of the whole key, prefix of
-- 12 characters, last four). Members: owner as owner, and the user
-- scale-member@example.com (created here) as member, of every organization.
--
-- What the API's triggers would compute per row is written here in bulk
-- instead, with the user triggers of the loaded tables disabled for the
-- transaction (foreign keys and CHECKs still hold, they are not user
-- triggers): the default environments, flags.tags_json,
-- production_value, enabled_in_json and rolled_out_since, flag_environments.
-- rolled_out_since, and at the end one move of config_generation with
-- every new organization's config_org_generation row and the NOTIFY.
-- Not written: revisions and audit events of the creation (the API would
-- write a flag.created revision per flag; neither the list, the detail
-- nor a change needs them: a flag without revisions shows an empty
-- history). contrib/bench.d/scale_check.sql checks the invariants.
\set ON_ERROR_STOP 1
BEGIN;

ALTER TABLE orgs DISABLE TRIGGER USER;
ALTER TABLE environments DISABLE TRIGGER USER;
ALTER TABLE flags DISABLE TRIGGER USER;
ALTER TABLE variants DISABLE TRIGGER USER;
ALTER TABLE flag_environments DISABLE TRIGGER USER;
ALTER TABLE rules DISABLE TRIGGER USER;
ALTER TABLE sdk_keys DISABLE TRIGGER USER;

CREATE TEMP TABLE scale_orgs ON COMMIT DROP AS
SELECT n, 'scale-' || lpad(n::text, 5, '0') AS slug,
       CASE n WHEN 1 THEN :big WHEN 2 THEN :big / 4 WHEN 3 THEN :big * 3 / 10
              WHEN 4 THEN :big * 4 / 10 WHEN 5 THEN :big / 2 WHEN 6 THEN 2000
              WHEN 7 THEN 350 WHEN 8 THEN 20 ELSE 30 + (n * 37) % 89 END AS size
  FROM generate_series(1, :orgs) AS n;

INSERT INTO orgs (name, slug)
SELECT 'Scale ' || n, slug FROM scale_orgs ORDER BY n;

INSERT INTO environments (org_id, key, name, sort_order)
SELECT o.id, e.key, e.name, e.sort_order
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug,
       (VALUES ('production', 'Production', 0), ('preview', 'Preview', 1),
               ('development', 'Development', 2)) AS e(key, name, sort_order)
 ORDER BY s.n, e.sort_order;

INSERT INTO users (email, name) VALUES ('scale-member@example.com', 'Scale Member')
    ON CONFLICT DO NOTHING;

INSERT INTO org_members (org_id, user_id, role)
SELECT o.id, u.id, CASE WHEN lower(u.email) = lower(:'owner') THEN 'owner' ELSE 'member' END
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug
 CROSS JOIN users u
 WHERE lower(u.email) IN (lower(:'owner'), 'scale-member@example.com');

-- i: the flag's number in its organization; 0 is `moving`.
-- Enabled in development and production (preview is disabled, below).
INSERT INTO flags (org_id, key, name, type, variant_seq, tags_json, production_value,
                   enabled_in_json)
SELECT o.id,
       CASE WHEN i = 0 THEN 'moving' ELSE 'flag-' || lpad(i::text, 6, '0') END,
       CASE WHEN i = 0 THEN 'Moving' ELSE 'Flag ' || i END,
       CASE WHEN i = 0 THEN 'string' ELSE 'boolean' END, 2, '[]',
       CASE WHEN i = 0 THEN '"value-a"' WHEN i % 2 = 0 THEN 'true' ELSE 'false' END::jsonb,
       '["development","production"]'
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug, generate_series(0, s.size - 1) AS i
 ORDER BY s.n, i;

INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, v.value::jsonb, v.n
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug JOIN flags f ON f.org_id = o.id,
       (VALUES ('on', 'true', 0, false), ('off', 'false', 1, false),
               ('a', '"value-a"', 0, true), ('b', '"value-b"', 1, true)) AS v(key, value, n, moving)
 WHERE v.moving = (f.key = 'moving');

-- d: the default variant, o: the other one (the off variant, and what the
-- development rule serves).
CREATE TEMP TABLE scale_serves ON COMMIT DROP AS
SELECT f.id AS flag_id, f.org_id,
       CASE WHEN f.key = 'moving' THEN 'a'
            WHEN substring(f.key FROM 6)::integer % 2 = 0 THEN 'on' ELSE 'off' END AS d,
       CASE WHEN f.key = 'moving' THEN 'b'
            WHEN substring(f.key FROM 6)::integer % 2 = 0 THEN 'off' ELSE 'on' END AS o
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug JOIN flags f ON f.org_id = o.id;

INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key,
                               rolled_out_since)
SELECT x.flag_id, e.id, e.key <> 'preview',
       jsonb_build_object('variant', CASE WHEN e.key = 'preview'
                                          THEN CASE WHEN x.d = 'a' THEN 'a' ELSE 'on' END
                                          ELSE x.d END),
       CASE WHEN e.key = 'preview' THEN CASE WHEN x.d = 'a' THEN 'b' ELSE 'off' END
            WHEN x.o = 'on' THEN 'off' ELSE x.o END,
       CASE WHEN e.key = 'production' THEN now() END
  FROM scale_serves x JOIN environments e ON e.org_id = x.org_id
 ORDER BY x.flag_id, e.sort_order;

INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions, serve)
SELECT x.flag_id, x.org_id, e.id, 0,
       CASE WHEN x.d = 'a'
            THEN '[{"attribute": "country", "operator": "eq", "values": ["XX"]}]'
            ELSE '[{"attribute": "country", "operator": "in", "values": ["NL", "BE"]}]' END::jsonb,
       jsonb_build_object('variant', x.o)
  FROM scale_serves x JOIN environments e ON e.org_id = x.org_id AND e.key = 'development';

INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix, last_four)
SELECT o.id, e.id, 'scale ' || e.key, encode(sha256(convert_to(k.key, 'UTF8')), 'hex'),
       left(k.key, 12), right(k.key, 4)
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug JOIN environments e ON e.org_id = o.id,
       LATERAL (SELECT 'svc_sdk_' || rpad(CASE e.key WHEN 'production' THEN 'ScalePrd'
                                                     ELSE 'ScaleDev' END
                                          || lpad(s.n::text, 6, '0'), 43, 'x') AS key) AS k
 WHERE e.key = 'development' OR (e.key = 'production' AND s.n IN (1, 2, 8));

ALTER TABLE orgs ENABLE TRIGGER USER;
ALTER TABLE environments ENABLE TRIGGER USER;
ALTER TABLE flags ENABLE TRIGGER USER;
ALTER TABLE variants ENABLE TRIGGER USER;
ALTER TABLE flag_environments ENABLE TRIGGER USER;
ALTER TABLE rules ENABLE TRIGGER USER;
ALTER TABLE sdk_keys ENABLE TRIGGER USER;

-- What the deferred triggers would have done at COMMIT: one generation for
-- the transaction, stamped on every organization it wrote, and the NOTIFY.
WITH g AS (UPDATE config_generation SET generation = generation + 1 WHERE id = 1
           RETURNING generation)
-- An organization's first record is whole (sql/0021: whole_generation), so
-- no config_flag_generation rows are needed for what it holds.
INSERT INTO config_org_generation AS c (org_id, generation, whole_generation)
SELECT o.id, g.generation, g.generation
  FROM scale_orgs s JOIN orgs o ON o.slug = s.slug CROSS JOIN g
    ON CONFLICT (org_id) DO UPDATE
       SET generation = EXCLUDED.generation, whole_generation = EXCLUDED.whole_generation;
SELECT pg_notify('ensign_config', generation::text) FROM config_generation WHERE id = 1 \gset

COMMIT;
