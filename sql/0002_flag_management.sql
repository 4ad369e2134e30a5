-- 0002_flag_management.sql - what the flag management API (src/flags.c,
-- variants.c, rules.c, environments.c, revisions.c) needs from the schema:
-- the JSON forms of its records, retired variant keys, and flag
-- configuration rows for environments created after their flags.
--
-- Invariants kept here:
-- - the first document's timestamps are ISO 8601 in UTC with milliseconds
--   ("2025-01-31T12:00:00.123Z"), written by ensign_iso() only.
-- - each record has exactly one JSON form (ensign_*_json), so every
--   endpoint answers the same shape; the forms are plain SQL functions
--   without subqueries where they run once per row of a list (inlined).
-- - a variant key is never reused within a flag: deleted keys are kept in
--   flags.retired_variant_keys.
-- - every (flag, environment) pair of an organization has a
--   flag_environments row, whichever of the two was created first.

CREATE FUNCTION ensign_iso(t timestamptz) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

ALTER TABLE flags ADD COLUMN retired_variant_keys text[] NOT NULL DEFAULT '{}';

-- ---------------------------------------------------------------------------
-- JSON forms (flags-and-evaluation-api.md section 2)

CREATE FUNCTION ensign_flag_json(f flags) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object(
              'id', f.id, 'key', f.key, 'name', f.name, 'description', f.description,
              'type', f.type, 'permanent', f.permanent, 'tags', to_jsonb(f.tags),
              'maintainerUserId', f.maintainer_user_id,
              'createdByUserId', f.created_by_user_id,
              'archivedAt', ensign_iso(f.archived_at),
              'createdAt', ensign_iso(f.created_at), 'updatedAt', ensign_iso(f.updated_at)) $$;

-- The detail form: the flag form plus the names of its creator and maintainer.
CREATE FUNCTION ensign_flag_detail_json(f flags) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT ensign_flag_json(f) || jsonb_build_object(
              'createdByName', (SELECT u.name FROM users u WHERE u.id = f.created_by_user_id),
              'maintainerName', (SELECT u.name FROM users u WHERE u.id = f.maintainer_user_id)) $$;

CREATE FUNCTION ensign_variant_json(v variants) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', v.id, 'key', v.key, 'value', v.value,
                                    'label', v.label, 'sortOrder', v.sort_order) $$;

CREATE FUNCTION ensign_rule_json(r rules) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', r.id, 'priority', r.priority,
                                    'description', r.description, 'conditions', r.conditions,
                                    'serve', r.serve, 'createdAt', ensign_iso(r.created_at),
                                    'updatedAt', ensign_iso(r.updated_at)) $$;

CREATE FUNCTION ensign_revision_json(r revisions) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', r.id, 'action', r.action, 'summary', r.summary,
                                    'changes', to_jsonb(r.changes), 'userName', r.user_name,
                                    'createdAt', ensign_iso(r.created_at)) $$;

CREATE FUNCTION ensign_environment_json(e environments) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', e.id, 'key', e.key, 'name', e.name,
                                    'createdAt', ensign_iso(e.created_at)) $$;

-- A flag's configuration in one environment, rules in evaluation order.
CREATE FUNCTION ensign_flag_environment_json(fe flag_environments, e environments)
    RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object(
              'key', e.key, 'name', e.name, 'enabled', fe.enabled,
              'defaultVariantKey', fe.default_serve ->> 'variant',
              'defaultServe', fe.default_serve, 'offVariantKey', fe.off_variant_key,
              'rules', COALESCE((SELECT jsonb_agg(ensign_rule_json(r)
                                                  ORDER BY r.priority, r.created_at, r.id)
                                   FROM rules r
                                  WHERE r.flag_id = fe.flag_id
                                    AND r.environment_id = fe.environment_id), '[]')) $$;

-- Does a serve object name variant key (single form or any rollout item)?
CREATE FUNCTION ensign_serve_names(serve jsonb, key text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT serve ->> 'variant' = key
                 OR COALESCE(serve -> 'rollout' @> jsonb_build_array(jsonb_build_object('variant', key)),
                             false) $$;

-- ---------------------------------------------------------------------------
-- Environments created after their flags get the flags' default
-- configuration (decisions.md section 3): disabled, default serve the first
-- variant, off variant "off" for boolean flags and otherwise the second
-- variant (the first when there is one). A flag without variants gets an
-- empty default serve and no off variant until its first variant exists.

CREATE FUNCTION ensign_configure_new_environment() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO flag_environments (flag_id, environment_id, default_serve, off_variant_key)
    SELECT f.id, NEW.id,
           CASE WHEN first_variant.key IS NULL THEN '{}'
                ELSE jsonb_build_object('variant', first_variant.key) END,
           CASE WHEN f.type = 'boolean' THEN 'off'
                ELSE COALESCE(second_variant.key, first_variant.key) END
      FROM flags f
      LEFT JOIN LATERAL (SELECT v.key FROM variants v WHERE v.flag_id = f.id
                          ORDER BY v.sort_order, v.created_at, v.id LIMIT 1) first_variant ON true
      LEFT JOIN LATERAL (SELECT v.key FROM variants v WHERE v.flag_id = f.id
                          ORDER BY v.sort_order, v.created_at, v.id OFFSET 1 LIMIT 1) second_variant
             ON true
     WHERE f.org_id = NEW.org_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER environments_configure_flags
    AFTER INSERT ON environments
    FOR EACH ROW EXECUTE FUNCTION ensign_configure_new_environment();

-- ---------------------------------------------------------------------------
-- Usage roll-ups for the flag list. usage_counters has one row per (flag,
-- environment, variant, hour), so summing it for every flag of a list grows
-- with history. The flusher's upserts keep two small roll-ups current
-- instead: per flag (all-time total, last seen) and per flag and hour
-- (the list's 24-hour series). A row deleted with its flag is not rolled
-- up (the roll-ups go with the flag); one deleted otherwise (an
-- environment removed) is subtracted.

CREATE TABLE flag_usage_totals (
    flag_id      uuid PRIMARY KEY REFERENCES flags (id) ON DELETE CASCADE,
    total        bigint NOT NULL CHECK (total >= 0),
    last_seen_at timestamptz NOT NULL
);

CREATE TABLE flag_usage_hours (
    flag_id uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
    hour    timestamptz NOT NULL,
    count   bigint NOT NULL CHECK (count >= 0),
    PRIMARY KEY (flag_id, hour)
);

CREATE FUNCTION ensign_roll_up_usage() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    row_flag uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.flag_id ELSE NEW.flag_id END;
    row_hour timestamptz := CASE WHEN TG_OP = 'DELETE' THEN OLD.hour ELSE NEW.hour END;
    seen timestamptz := CASE WHEN TG_OP = 'DELETE' THEN OLD.last_seen_at
                             ELSE NEW.last_seen_at END;
    delta bigint := CASE WHEN TG_OP = 'INSERT' THEN NEW.count
                         WHEN TG_OP = 'UPDATE' THEN NEW.count - OLD.count
                         ELSE -OLD.count END;
BEGIN
    IF delta = 0 AND TG_OP <> 'INSERT' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM flags WHERE id = row_flag) THEN
        RETURN NULL;
    END IF;
    INSERT INTO flag_usage_totals AS t (flag_id, total, last_seen_at)
    VALUES (row_flag, GREATEST(delta, 0), seen)
    ON CONFLICT (flag_id) DO UPDATE
        SET total = GREATEST(t.total + delta, 0),
            last_seen_at = GREATEST(t.last_seen_at, EXCLUDED.last_seen_at);
    INSERT INTO flag_usage_hours AS h (flag_id, hour, count)
    VALUES (row_flag, row_hour, GREATEST(delta, 0))
    ON CONFLICT (flag_id, hour) DO UPDATE SET count = GREATEST(h.count + delta, 0);
    RETURN NULL;
END
$$;

CREATE TRIGGER usage_counters_roll_up
    AFTER INSERT OR UPDATE OF count OR DELETE ON usage_counters
    FOR EACH ROW EXECUTE FUNCTION ensign_roll_up_usage();

INSERT INTO flag_usage_totals (flag_id, total, last_seen_at)
SELECT flag_id, sum(count), max(last_seen_at) FROM usage_counters GROUP BY flag_id;
INSERT INTO flag_usage_hours (flag_id, hour, count)
SELECT flag_id, hour, sum(count) FROM usage_counters GROUP BY flag_id, hour;
