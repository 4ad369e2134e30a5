-- accounts.sql - the accounts part of contrib/bench: organization :org with
-- 100,000 members and 10,000 projects, made with generate_series in a few
-- statements. Every 20th member is called Anna (a search that matches
-- 5,000 rows); emails are mNNNNNN@bench.example (a search for one number
-- matches one row); projects are "Project NNNNN" with slug proj-NNNNN.
\set ON_ERROR_STOP on
INSERT INTO users (email, name, username, created_at)
SELECT 'm' || lpad(i::text, 6, '0') || '@bench.example',
       (ARRAY['Anna', 'Bram', 'Chen', 'Dara', 'Emil', 'Fay', 'Gus', 'Hana', 'Ivo', 'Juno',
              'Kai', 'Lena', 'Milo', 'Nia', 'Otto', 'Pia', 'Quin', 'Rosa', 'Sven', 'Tess'])[i % 20 + 1]
       || ' Member ' || i,
       'member-' || i, now() - interval '1 day' + i * interval '1 millisecond'
  FROM generate_series(1, 100000) AS i;
INSERT INTO org_members (org_id, user_id, role, created_at)
SELECT o.id, u.id, 'member', u.created_at
  FROM orgs o, users u WHERE o.slug = :'org' AND u.email LIKE '%@bench.example';
INSERT INTO projects (org_id, name, slug, created_at)
SELECT o.id, 'Project ' || lpad(i::text, 5, '0'), 'proj-' || lpad(i::text, 5, '0'),
       now() - interval '1 day' + i * interval '1 millisecond'
  FROM orgs o, generate_series(1, 10000) AS i WHERE o.slug = :'org';
VACUUM ANALYZE users;
VACUUM ANALYZE org_members;
VACUUM ANALYZE projects;
