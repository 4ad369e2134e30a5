-- 0015_stale_unknown.sql - what stale flags and unknown flag keys need
-- (doc/api.md, GET /v1/orgs/{org}/flags and /unknown-flags;
-- doc/choices.md, "Stale and unknown flags").
--
-- Stale. A flag is stale for one of three reasons, each decided from
-- columns the flag list already reads (no per-row subquery):
-- - never_evaluated: no usage (no flag_usage_totals row) and created at
--   least stale_after_days ago; since = created_at + stale_after_days;
-- - unused: last evaluated (flag_usage_totals.last_seen_at) at least
--   stale_after_days ago; since = last_seen_at + stale_after_days;
-- - fully_rolled_out: flags.rolled_out_since at least stale_after_days
--   ago; since = rolled_out_since + stale_after_days.
-- The first that holds, in that order, is the reason; a permanent flag is
-- never stale.
--
-- flag_environments.rolled_out_since is the moment since which the
-- environment has been enabled, without rules, serving one variant by
-- default (the single form, or a rollout whose every item of non-zero
-- weight names the same variant); NULL while that is not so. It is
-- written when it becomes true, by the writes themselves (triggers below),
-- never guessed from revisions: a change of the served variant starts it
-- again. flags.rolled_out_since is the latest of its enabled
-- environments' moments when every enabled environment has one, NULL
-- when one has none or no environment is enabled.
--
-- Unknown flags. unknown_flags counts, per environment, the keys SDKs asked
-- for (single OFREP evaluation) that named no flag: written only by the
-- flusher through ensign_unknown_flags_record, which adds the drained
-- counts, skips keys that name a flag by then and keeps at most 1,000 keys
-- per environment (the least recently seen go first). Creating a flag
-- deletes its key's rows in every environment of the organization.
--
-- Invariants: rolled_out_since as above on every row; unknown_flags.key
-- passes ensign_key_ok (a hostile key is never stored); at most 1,000 rows
-- per environment after each record.

-- ---------------------------------------------------------------------------
-- Stale

-- The one variant a serve object serves, or NULL when it may serve several.
CREATE FUNCTION ensign_sole_variant(serve jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN jsonb_typeof(serve -> 'variant') = 'string' THEN serve ->> 'variant'
        WHEN jsonb_typeof(serve -> 'rollout') = 'array' THEN
            (SELECT CASE WHEN count(DISTINCT i ->> 'variant') = 1 THEN min(i ->> 'variant') END
               FROM jsonb_array_elements(serve -> 'rollout') AS i
              WHERE jsonb_typeof(i -> 'weight') = 'number' AND (i -> 'weight')::numeric > 0)
    END
$$;

-- Why a flag is stale (NULL: it is not), from its columns and the horizon
-- (now minus stale_after_days). Inlined where it is called.
CREATE FUNCTION ensign_stale_reason(permanent boolean, created_at timestamptz,
                                    last_seen_at timestamptz, rolled_out_since timestamptz,
                                    horizon timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN permanent THEN NULL
        WHEN last_seen_at IS NULL AND created_at <= horizon THEN 'never_evaluated'
        WHEN last_seen_at <= horizon THEN 'unused'
        WHEN rolled_out_since <= horizon THEN 'fully_rolled_out'
    END
$$;

-- Since when a flag is stale (NULL: it is not): the moment its reason's
-- clock started plus stale_after_days (after; horizon is now minus after).
-- The same cases as ensign_stale_reason, on the same plain arguments, so
-- that it is inlined too (a function of the reason was not: 20 us a row).
-- STABLE, as timestamptz + interval is: an IMMUTABLE one is not inlined.
CREATE FUNCTION ensign_stale_since(permanent boolean, created_at timestamptz,
                                   last_seen_at timestamptz, rolled_out_since timestamptz,
                                   horizon timestamptz, after interval) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN permanent THEN NULL
        WHEN last_seen_at IS NULL AND created_at <= horizon THEN created_at + after
        WHEN last_seen_at <= horizon THEN last_seen_at + after
        WHEN rolled_out_since <= horizon THEN rolled_out_since + after
    END
$$;

ALTER TABLE flag_environments ADD COLUMN rolled_out_since timestamptz;
ALTER TABLE flags ADD COLUMN rolled_out_since timestamptz;

-- The detail's stale member: null or {reason, since}; horizon is now minus
-- after, as the list takes it (src/api/flaglist.c).
CREATE FUNCTION ensign_flag_stale_json(f flags, after interval, horizon timestamptz)
    RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN s.reason IS NULL THEN 'null'::jsonb
                ELSE jsonb_build_object('reason', s.reason, 'since', ensign_iso(s.since))
           END
      FROM (SELECT ensign_stale_reason((f).permanent, (f).created_at, ut.last_seen_at,
                                       (f).rolled_out_since, horizon) AS reason,
                   ensign_stale_since((f).permanent, (f).created_at, ut.last_seen_at,
                                      (f).rolled_out_since, horizon, after) AS since
              FROM (SELECT 1) AS one
              LEFT JOIN flag_usage_totals ut ON ut.flag_id = (f).id) AS s
$$;

-- An environment's moment, on the writes of its own columns.
CREATE FUNCTION ensign_flag_environments_rolled_out() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    sole text := CASE WHEN NEW.enabled THEN ensign_sole_variant(NEW.default_serve) END;
BEGIN
    IF sole IS NULL OR EXISTS (SELECT 1 FROM rules r
                                WHERE r.flag_id = NEW.flag_id
                                  AND r.environment_id = NEW.environment_id) THEN
        NEW.rolled_out_since := NULL;
    ELSIF TG_OP = 'UPDATE' AND OLD.rolled_out_since IS NOT NULL
          AND ensign_sole_variant(OLD.default_serve) = sole THEN
        NEW.rolled_out_since := OLD.rolled_out_since;
    ELSE
        NEW.rolled_out_since := now();
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER flag_environments_rolled_out
    BEFORE INSERT OR UPDATE OF enabled, default_serve ON flag_environments
    FOR EACH ROW EXECUTE FUNCTION ensign_flag_environments_rolled_out();

-- The environments' moments again after rules of theirs were added or
-- removed (changed: the transition table of the statement). A rule never
-- moves to another flag or environment.
CREATE FUNCTION ensign_rules_rolled_out() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE flag_environments fe SET rolled_out_since = t.since
      FROM (SELECT x.flag_id, x.environment_id,
                   CASE WHEN x.enabled AND ensign_sole_variant(x.default_serve) IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM rules r
                                              WHERE r.flag_id = x.flag_id
                                                AND r.environment_id = x.environment_id)
                        THEN coalesce(x.rolled_out_since, now()) END AS since
              FROM flag_environments x
              JOIN (SELECT DISTINCT c.flag_id, c.environment_id FROM changed c) AS c
                ON c.flag_id = x.flag_id AND c.environment_id = x.environment_id) AS t
     WHERE fe.flag_id = t.flag_id AND fe.environment_id = t.environment_id
       AND fe.rolled_out_since IS DISTINCT FROM t.since;
    RETURN NULL;
END
$$;

CREATE TRIGGER rules_rolled_out_insert
    AFTER INSERT ON rules REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_rules_rolled_out();
CREATE TRIGGER rules_rolled_out_delete
    AFTER DELETE ON rules REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_rules_rolled_out();

-- The flag's moment from its environments' (written only when it changes).
CREATE FUNCTION ensign_flags_rolled_out() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    flag uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.flag_id ELSE NEW.flag_id END;
    since timestamptz;
BEGIN
    SELECT CASE WHEN bool_and(fe.rolled_out_since IS NOT NULL) THEN max(fe.rolled_out_since) END
      INTO since
      FROM flag_environments fe WHERE fe.flag_id = flag AND fe.enabled;
    UPDATE flags SET rolled_out_since = since
     WHERE id = flag AND rolled_out_since IS DISTINCT FROM since;
    RETURN NULL;
END
$$;

CREATE TRIGGER flag_environments_flag_rolled_out
    AFTER INSERT OR DELETE ON flag_environments
    FOR EACH ROW EXECUTE FUNCTION ensign_flags_rolled_out();
CREATE TRIGGER flag_environments_flag_rolled_out_update
    AFTER UPDATE ON flag_environments
    FOR EACH ROW
    WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled
          OR OLD.rolled_out_since IS DISTINCT FROM NEW.rolled_out_since)
    EXECUTE FUNCTION ensign_flags_rolled_out();

-- What holds now counts from now: the past is not guessed.
UPDATE flag_environments fe SET rolled_out_since = now()
 WHERE fe.enabled AND ensign_sole_variant(fe.default_serve) IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM rules r
                    WHERE r.flag_id = fe.flag_id AND r.environment_id = fe.environment_id);

-- ---------------------------------------------------------------------------
-- Unknown flags

CREATE TABLE unknown_flags (
    environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    key            text NOT NULL CHECK (ensign_key_ok(key)),
    count          bigint NOT NULL CHECK (count >= 0),
    last_seen_at   timestamptz NOT NULL,
    PRIMARY KEY (environment_id, key)
);
CREATE INDEX unknown_flags_recent_idx ON unknown_flags (environment_id, last_seen_at DESC, key);

-- Adds drained counts (parallel arrays: environment ids, keys, counts,
-- unix seconds last seen), then trims each environment it touched to its
-- 1,000 most recently seen keys. Rows are locked in (environment, key)
-- order, so two nodes' flushers do not deadlock on them.
CREATE FUNCTION ensign_unknown_flags_record(envs uuid[], keys text[], counts bigint[],
                                            seen bigint[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO unknown_flags AS u (environment_id, key, count, last_seen_at)
    SELECT i.env, i.key, sum(i.count), to_timestamp(max(i.seen))
      FROM unnest(envs, keys, counts, seen) AS i(env, key, count, seen)
      JOIN environments e ON e.id = i.env
     WHERE ensign_key_ok(i.key)
       AND NOT EXISTS (SELECT 1 FROM flags f WHERE f.org_id = e.org_id AND f.key = i.key)
     GROUP BY i.env, i.key
     ORDER BY i.env, i.key
    ON CONFLICT (environment_id, key) DO UPDATE
        SET count = u.count + EXCLUDED.count,
            last_seen_at = greatest(u.last_seen_at, EXCLUDED.last_seen_at);
    DELETE FROM unknown_flags u
     USING (SELECT d.environment_id, d.key
              FROM (SELECT DISTINCT x AS env FROM unnest(envs) AS x) AS t
             CROSS JOIN LATERAL (SELECT o.environment_id, o.key FROM unknown_flags o
                                  WHERE o.environment_id = t.env
                                  ORDER BY o.last_seen_at DESC, o.key
                                 OFFSET 1000) AS d) AS old
     WHERE u.environment_id = old.environment_id AND u.key = old.key;
END
$$;

-- A key stops being unknown when a flag takes it.
CREATE FUNCTION ensign_flags_forget_unknown() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM unknown_flags u USING environments e
     WHERE e.org_id = NEW.org_id AND u.environment_id = e.id AND u.key = NEW.key;
    RETURN NULL;
END
$$;

CREATE TRIGGER flags_forget_unknown
    AFTER INSERT ON flags
    FOR EACH ROW EXECUTE FUNCTION ensign_flags_forget_unknown();
