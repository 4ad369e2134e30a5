-- 0013_revision_state.sql - every revision carries the flag's targeting
-- as it stood after the change, and the two writes built on it: a restore
-- of that targeting (src/api/flagrevision.c) and a copy of one
-- environment's targeting to another (src/api/envcopy.c). doc/choices.md,
-- "Revision state".
--
-- Invariants kept here:
-- - revisions.state is the flag's targeting (the trigger's query below)
--   as it stood at the end of the statement that inserted the revision
--   (NULL for the revisions written before this migration). It is set by
--   a statement trigger
--   AFTER INSERT on revisions: such a trigger runs once the whole
--   statement is done (every data-modifying WITH clause included) and
--   its queries see all the statement's changes, so a write records its
--   state without a second round trip and without knowing about it.
--   Several revisions of one flag inserted by one statement share one
--   computation. Nothing else writes state.
-- - A state names environments by key (environments are only created,
--   their key never changes) and lists rules with their ids in
--   evaluation order (priority, created_at, id).
-- - A restore and a copy are each one statement (a function below): they
--   lock the flag row first, like every flag write, write the targeting,
--   then insert their one revision (whose state the trigger records, so
--   it already sees the restored targeting) and the audit event. The
--   configuration generation moves by the triggers of sql/0001 and 0007
--   (NOTIFY at commit) as for any other write.

ALTER TABLE revisions ADD COLUMN state json NULL;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
                WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE revisions ALTER COLUMN state SET COMPRESSION lz4;
    END IF;
END
$$;

-- The rules of a flag in one environment as a state lists them.
CREATE FUNCTION ensign_rules_state(flag uuid, env uuid) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
                      'id', r.id, 'priority', r.priority, 'description', r.description,
                      'conditions', r.conditions, 'serve', r.serve)
                      ORDER BY r.priority, r.created_at, r.id), '[]')
      FROM rules r WHERE r.flag_id = flag AND r.environment_id = env
    $$;

-- The state of each flag the statement wrote revisions of: name,
-- description, tags and per environment (display order) enabled, default
-- serve, off variant and rules (ensign_rules_state's form). One query,
-- written out: a LANGUAGE sql function that is not inlined is planned
-- again on every call, and that planning was most of the trigger's cost
-- (PL/pgSQL keeps this plan, a generic one, for the session). json, not
-- jsonb: building jsonb took twice as long (doc/choices.md, "Revision
-- state").
CREATE FUNCTION ensign_revision_states_record() RETURNS trigger
    LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan
    AS $$
BEGIN
    UPDATE revisions r SET state = s.state
      FROM new_revisions nr
      JOIN (SELECT f.id AS flag_id,
                   json_build_object(
                     'name', f.name, 'description', f.description, 'tags', to_json(f.tags),
                     'environments', COALESCE((
                       SELECT json_agg(json_build_object(
                                'key', e.key, 'enabled', fe.enabled,
                                'defaultServe', fe.default_serve,
                                'offVariantKey', fe.off_variant_key,
                                'rules', COALESCE((
                                  SELECT json_agg(json_build_object(
                                           'id', ru.id, 'priority', ru.priority,
                                           'description', ru.description,
                                           'conditions', ru.conditions, 'serve', ru.serve)
                                           ORDER BY ru.priority, ru.created_at, ru.id)
                                    FROM rules ru
                                   WHERE ru.flag_id = fe.flag_id
                                     AND ru.environment_id = fe.environment_id), '[]'))
                                ORDER BY e.sort_order, e.key)
                         FROM flag_environments fe JOIN environments e ON e.id = fe.environment_id
                        WHERE fe.flag_id = f.id), '[]')) AS state
              FROM flags f
             WHERE f.id IN (SELECT DISTINCT n.flag_id FROM new_revisions n)) AS s
        ON s.flag_id = nr.flag_id
     WHERE r.id = nr.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER revisions_state
    AFTER INSERT ON revisions REFERENCING NEW TABLE AS new_revisions
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_revision_states_record();

-- The variant keys a state serves (default serves, off variants, rule
-- serves, single or rollout).
CREATE FUNCTION ensign_state_variant_keys(state jsonb) RETURNS SETOF text
    LANGUAGE sql IMMUTABLE
    AS $$
    WITH envs AS (SELECT e FROM jsonb_array_elements(state -> 'environments') AS x(e)),
         serves AS (SELECT e -> 'defaultServe' AS s FROM envs
                    UNION ALL
                    SELECT r -> 'serve' FROM envs, jsonb_array_elements(e -> 'rules') AS y(r))
    SELECT e ->> 'offVariantKey' FROM envs WHERE e ->> 'offVariantKey' IS NOT NULL
    UNION
    SELECT s ->> 'variant' FROM serves WHERE s ->> 'variant' IS NOT NULL
    UNION
    SELECT i ->> 'variant' FROM serves,
           jsonb_array_elements(CASE WHEN jsonb_typeof(s -> 'rollout') = 'array'
                                     THEN s -> 'rollout' ELSE '[]' END) AS z(i)
     WHERE i ->> 'variant' IS NOT NULL
    $$;

-- The segment keys the rules of a state name.
CREATE FUNCTION ensign_state_segment_keys(state jsonb) RETURNS SETOF text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT DISTINCT c ->> 'segment'
      FROM jsonb_array_elements(state -> 'environments') AS x(e),
           jsonb_array_elements(e -> 'rules') AS y(r),
           jsonb_array_elements(r -> 'conditions') AS z(c)
     WHERE c ->> 'segment' IS NOT NULL
    $$;

-- Replaces the rules of a flag in one environment by the state's rules
-- (their ids kept: these were the flag's rules in that environment, and
-- no other rule can hold those ids), in the state's order. A no-op when
-- they are the same already. Returns "rules: N → M" or NULL.
CREATE FUNCTION ensign_rules_put(flag uuid, env uuid, wanted jsonb, keep_ids boolean)
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
    INSERT INTO rules (id, flag_id, environment_id, priority, description, conditions, serve,
                       created_at)
    SELECT CASE WHEN keep_ids THEN (x.r ->> 'id')::uuid ELSE gen_random_uuid() END, flag, env,
           (x.r ->> 'priority')::bigint, x.r ->> 'description', x.r -> 'conditions',
           x.r -> 'serve', now() + x.ord * interval '1 microsecond'
      FROM jsonb_array_elements(wanted) WITH ORDINALITY AS x(r, ord);
    RETURN 'rules: ' || jsonb_array_length(current) || ' → ' || jsonb_array_length(wanted);
END
$$;

-- The changes lines of one environment's targeting from old to new (both
-- in the state's environment form); rules_change from ensign_rules_put.
CREATE FUNCTION ensign_env_changes(env_key text, old jsonb, new jsonb, rules_change text)
    RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT array_remove(ARRAY[
             CASE WHEN old -> 'enabled' IS DISTINCT FROM new -> 'enabled'
                  THEN env_key || ' enabled: ' || (old ->> 'enabled') || ' → ' || (new ->> 'enabled') END,
             CASE WHEN old -> 'defaultServe' IS DISTINCT FROM new -> 'defaultServe'
                  THEN env_key || ' defaultServe: ' || (old ->> 'defaultServe') || ' → '
                       || (new ->> 'defaultServe') END,
             CASE WHEN old -> 'offVariantKey' IS DISTINCT FROM new -> 'offVariantKey'
                  THEN env_key || ' offVariantKey: ' || COALESCE(old ->> 'offVariantKey', 'null')
                       || ' → ' || COALESCE(new ->> 'offVariantKey', 'null') END,
             CASE WHEN rules_change IS NOT NULL THEN env_key || ' ' || rules_change END],
           NULL)
    $$;

-- One environment's targeting in the state's form, without its rules.
CREATE FUNCTION ensign_env_settings(fe flag_environments) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT jsonb_build_object('enabled', fe.enabled, 'defaultServe', fe.default_serve,
                                    'offVariantKey', fe.off_variant_key) $$;

-- Records the one revision of a restore or a copy and its audit event;
-- answers the revision's detail form (with state).
CREATE FUNCTION ensign_targeting_revision(f flags, env uuid, action text, summary text,
                                          changes text[], actor_id text, actor_name text,
                                          actor jsonb)
    RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    rev revisions;
    rev_id uuid;
    env_key text := (SELECT e.key FROM environments e WHERE e.id = env);
BEGIN
    INSERT INTO revisions (flag_id, environment_id, action, summary, changes, user_id, user_name)
    VALUES (f.id, env, action, summary, changes, NULLIF(actor_id, '')::uuid,
            NULLIF(actor_name, ''))
    RETURNING id INTO rev_id;
    SELECT * INTO rev FROM revisions r WHERE r.id = rev_id; -- with the trigger's state
    PERFORM ensign_audit_record(actor, NULL, action, 'Flag ' || f.key || ': ' || summary,
                                'flags/' || f.key || COALESCE('/environments/' || env_key, ''));
    RETURN ensign_revision_json(rev) || jsonb_build_object('state', rev.state);
END
$$;

-- POST /flags/{key}/revisions/{id}/restore: flag is the flag's id (from
-- the caller's organization), revision the path's id text.
CREATE FUNCTION ensign_flag_restore_revision(flag uuid, revision text, actor_id text,
                                             actor_name text, actor jsonb)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    f flags;
    old revisions;
    st jsonb;
    missing text;
    changes text[] := '{}';
    item jsonb;
    fe flag_environments;
    before jsonb;
    rules_change text;
BEGIN
    SELECT * INTO f FROM flags WHERE id = flag FOR UPDATE;
    IF NOT FOUND THEN
        RETURN ensign_fail(404, 'flag not found');
    END IF;
    IF revision ~* '^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$' THEN
        SELECT * INTO old FROM revisions r WHERE r.id = revision::uuid AND r.flag_id = flag;
    END IF;
    IF old.id IS NULL THEN
        RETURN ensign_fail(404, 'revision not found');
    END IF;
    IF f.archived_at IS NOT NULL THEN
        RETURN ensign_fail(409, 'the flag is archived; restore it first');
    END IF;
    IF old.state IS NULL THEN
        RETURN ensign_fail(409, 'revision ' || old.id || ' has no recorded state'
                                || ' (it was written before revisions recorded targeting)');
    END IF;
    st := old.state::jsonb;
    missing := (SELECT string_agg(k, ', ' ORDER BY k) FROM ensign_state_variant_keys(st) k
                 WHERE NOT EXISTS (SELECT 1 FROM variants v WHERE v.flag_id = flag AND v.key = k));
    IF missing IS NOT NULL THEN
        RETURN ensign_fail(409, 'the flag no longer has the variants this revision serves: '
                                || missing || ' (variants are not recreated)');
    END IF;
    missing := (SELECT string_agg(k, ', ' ORDER BY k) FROM ensign_state_segment_keys(st) k
                 WHERE NOT EXISTS (SELECT 1 FROM segments s WHERE s.org_id = f.org_id
                                      AND s.key = k));
    IF missing IS NOT NULL THEN
        RETURN ensign_fail(409, 'the segments this revision''s rules use no longer exist: '
                                || missing);
    END IF;

    UPDATE flags fl
       SET name = st ->> 'name', description = st ->> 'description',
           tags = ARRAY(SELECT jsonb_array_elements_text(st -> 'tags')), updated_at = now()
     WHERE fl.id = flag
       AND (fl.name, fl.description, to_jsonb(fl.tags))
           IS DISTINCT FROM (st ->> 'name', st ->> 'description', st -> 'tags');
    IF FOUND THEN
        changes := array_remove(ARRAY[
            CASE WHEN f.name IS DISTINCT FROM st ->> 'name'
                 THEN 'name: ' || f.name || ' → ' || (st ->> 'name') END,
            CASE WHEN f.description IS DISTINCT FROM st ->> 'description'
                 THEN 'description: ' || COALESCE(f.description, 'null') || ' → '
                      || COALESCE(st ->> 'description', 'null') END,
            CASE WHEN to_jsonb(f.tags) IS DISTINCT FROM st -> 'tags'
                 THEN 'tags: ' || array_to_string(f.tags, ', ') || ' → '
                      || array_to_string(ARRAY(SELECT jsonb_array_elements_text(st -> 'tags')), ', ')
                 END], NULL);
    END IF;

    FOR item IN SELECT x.e FROM jsonb_array_elements(st -> 'environments') AS x(e) LOOP
        SELECT fe0.* INTO fe FROM flag_environments fe0
          JOIN environments e ON e.id = fe0.environment_id
         WHERE fe0.flag_id = flag AND e.org_id = f.org_id AND e.key = item ->> 'key'
           FOR UPDATE OF fe0;
        CONTINUE WHEN NOT FOUND; -- an environment that no longer exists
        before := ensign_env_settings(fe);
        UPDATE flag_environments fe1
           SET enabled = (item ->> 'enabled')::boolean, default_serve = item -> 'defaultServe',
               off_variant_key = item ->> 'offVariantKey', updated_at = now()
         WHERE fe1.flag_id = fe.flag_id AND fe1.environment_id = fe.environment_id
           AND before IS DISTINCT FROM (item - 'key' - 'rules');
        rules_change := ensign_rules_put(flag, fe.environment_id, item -> 'rules', true);
        changes := changes || ensign_env_changes(item ->> 'key', before, item, rules_change);
    END LOOP;

    RETURN ensign_ok(jsonb_build_object('revision', ensign_targeting_revision(
        f, NULL, 'flag.revision_restored',
        'Restored revision ' || old.id || ' (' || COALESCE(old.summary, old.action) || ', '
            || ensign_iso(old.created_at) || ')',
        changes, actor_id, actor_name, actor)));
END
$$;

-- POST /flags/{key}/environments/{env}/copy {from}: flag and env the
-- flag's and the target environment's ids, from_key the source's key.
CREATE FUNCTION ensign_flag_copy_environment(flag uuid, env uuid, from_key text, actor_id text,
                                             actor_name text, actor jsonb)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    f flags;
    target flag_environments;
    source flag_environments;
    target_env environments;
    source_env environments;
    before jsonb;
    rules_change text;
BEGIN
    SELECT * INTO f FROM flags WHERE id = flag FOR UPDATE;
    IF NOT FOUND THEN
        RETURN ensign_fail(404, 'flag not found');
    END IF;
    IF f.archived_at IS NOT NULL THEN
        RETURN ensign_fail(409, 'the flag is archived; restore it first');
    END IF;
    SELECT * INTO target_env FROM environments WHERE id = env;
    SELECT * INTO source_env FROM environments WHERE org_id = f.org_id AND key = from_key;
    IF source_env.id IS NULL THEN
        RETURN ensign_invalid('from', 'no environment ' || from_key);
    END IF;
    IF source_env.id = env THEN
        RETURN ensign_invalid('from', 'is the environment copied to');
    END IF;
    SELECT * INTO target FROM flag_environments WHERE flag_id = flag AND environment_id = env
       FOR UPDATE;
    SELECT * INTO source FROM flag_environments WHERE flag_id = flag
       AND environment_id = source_env.id;
    IF target.flag_id IS NULL OR source.flag_id IS NULL THEN
        RETURN ensign_fail(404, 'environment not found');
    END IF;
    before := ensign_env_settings(target);
    UPDATE flag_environments fe
       SET default_serve = source.default_serve, off_variant_key = source.off_variant_key,
           updated_at = now()
     WHERE fe.flag_id = flag AND fe.environment_id = env
       AND (fe.default_serve, fe.off_variant_key)
           IS DISTINCT FROM (source.default_serve, source.off_variant_key)
    RETURNING * INTO target;
    IF NOT FOUND THEN
        SELECT * INTO target FROM flag_environments WHERE flag_id = flag AND environment_id = env;
    END IF;
    rules_change := ensign_rules_put(flag, env, ensign_rules_state(flag, source_env.id), false);
    PERFORM ensign_targeting_revision(
        f, env, 'environment.copied',
        'Copied the targeting of ' || source_env.name || ' to ' || target_env.name,
        ensign_env_changes(target_env.key, before, ensign_env_settings(target), rules_change),
        actor_id, actor_name, actor);
    RETURN ensign_ok(jsonb_build_object('environment',
                                        ensign_flag_environment_json(target, target_env)));
END
$$;
