-- 0023_usage_flush.sql - the usage roll-ups kept per statement instead of
-- per row, so a flush of N counters costs O(N) (doc/choices.md, "The usage
-- flush at scale").
--
-- The flusher (src/daemon/flusher.c) writes a batch in one additive upsert
-- into usage_counters. Before, a row trigger on usage_counters ran two
-- upserts per counter (flag_usage_totals, flag_usage_hours), and a row
-- trigger on flag_usage_hours recomputed the flag's flag_usage_series row
-- per changed hour: about ten statements per counter, each with its own
-- executor start. Now one statement trigger per table and event reads the
-- statement's transition tables and does the same work in a few set-wise
-- statements.
--
-- Invariants (the roll-ups' of sql/0002, 0008 and 0009, unchanged):
-- - flag_usage_totals.total and flag_usage_hours.count are the sums of the
--   flag's usage_counters rows (per flag; per flag and hour), for rows not
--   deleted with their flag; last_seen_at the latest last_seen_at of a row
--   inserted, changed or removed.
-- - flag_usage_series has a row for a flag exactly when flag_usage_hours
--   has an hour-aligned row for it, recomputed from flag_usage_hours at
--   the end of every statement that changed them.
-- - A statement's changes are summed per flag (and hour) before they are
--   applied; a sum below zero (counters removed) is clamped at zero like
--   each row's delta was. The two differ only when a roll-up was already
--   below its counters' sum, which the triggers never leave.
-- - Everything happens inside the flush's statement: a failed or cancelled
--   flush leaves nothing behind, and the flusher retries it whole.

-- Applies one statement's changes of usage_counters, given as parallel
-- arrays (flag, hour, signed delta, last seen), to the two roll-ups. Rows
-- of flags that no longer exist are skipped by the caller. A sum of zero
-- or more is an additive upsert; a negative one updates the row (clamped
-- at zero), and the insert of a zero row for a key without one does
-- nothing where the key exists (ON CONFLICT sees the rows the update
-- changes, which existed before the statement).
CREATE FUNCTION ensign_usage_roll_up_apply(flag_ids uuid[], hours timestamptz[],
                                           deltas bigint[], seen timestamptz[]) RETURNS void
    LANGUAGE sql
    AS $$
    WITH changes AS (
        SELECT * FROM unnest(flag_ids, hours, deltas, seen) AS c(flag_id, hour, delta, seen)
    ), per_flag AS (
        SELECT flag_id, sum(delta)::bigint AS delta, max(seen) AS seen
          FROM changes GROUP BY flag_id
    ), totals_added AS (
        INSERT INTO flag_usage_totals AS t (flag_id, total, last_seen_at)
        SELECT flag_id, delta, seen FROM per_flag WHERE delta >= 0
        ON CONFLICT (flag_id) DO UPDATE
            SET total = t.total + EXCLUDED.total,
                last_seen_at = GREATEST(t.last_seen_at, EXCLUDED.last_seen_at)
    ), totals_removed AS (
        UPDATE flag_usage_totals AS t
           SET total = GREATEST(t.total + p.delta, 0),
               last_seen_at = GREATEST(t.last_seen_at, p.seen)
          FROM per_flag p
         WHERE t.flag_id = p.flag_id AND p.delta < 0
    ), totals_removed_new AS (
        INSERT INTO flag_usage_totals (flag_id, total, last_seen_at)
        SELECT p.flag_id, 0, p.seen FROM per_flag p WHERE p.delta < 0
        ON CONFLICT (flag_id) DO NOTHING
    ), per_hour AS (
        SELECT flag_id, hour, sum(delta)::bigint AS delta FROM changes GROUP BY flag_id, hour
    ), hours_added AS (
        INSERT INTO flag_usage_hours AS h (flag_id, hour, count)
        SELECT flag_id, hour, delta FROM per_hour WHERE delta >= 0
        ON CONFLICT (flag_id, hour) DO UPDATE SET count = h.count + EXCLUDED.count
    ), hours_removed AS (
        UPDATE flag_usage_hours AS h SET count = GREATEST(h.count + p.delta, 0)
          FROM per_hour p
         WHERE h.flag_id = p.flag_id AND h.hour = p.hour AND p.delta < 0
    )
    INSERT INTO flag_usage_hours (flag_id, hour, count)
    SELECT p.flag_id, p.hour, 0 FROM per_hour p WHERE p.delta < 0
    ON CONFLICT (flag_id, hour) DO NOTHING
$$;

-- The statement trigger of usage_counters: the changed rows of the
-- statement (an insert's new rows, a delete's old rows of flags still
-- there, an update's rows whose count changed, paired by primary key; a
-- row whose key changed counts as removed and added) to
-- ensign_usage_roll_up_apply.
CREATE FUNCTION ensign_roll_up_usage_statement() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    flag_ids uuid[];
    hours timestamptz[];
    deltas bigint[];
    seen timestamptz[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(n.flag_id), array_agg(n.hour), array_agg(n.count),
               array_agg(n.last_seen_at)
          INTO flag_ids, hours, deltas, seen
          FROM usage_new n;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(o.flag_id), array_agg(o.hour), array_agg(-o.count),
               array_agg(o.last_seen_at)
          INTO flag_ids, hours, deltas, seen
          FROM usage_old o
         WHERE o.count <> 0 AND EXISTS (SELECT 1 FROM flags f WHERE f.id = o.flag_id);
    ELSE
        SELECT array_agg(COALESCE(n.flag_id, o.flag_id)), array_agg(COALESCE(n.hour, o.hour)),
               array_agg(COALESCE(n.count, 0) - COALESCE(o.count, 0)),
               array_agg(COALESCE(n.last_seen_at, o.last_seen_at))
          INTO flag_ids, hours, deltas, seen
          FROM usage_new n
          FULL JOIN usage_old o
            ON o.flag_id = n.flag_id AND o.environment_id = n.environment_id
           AND o.variant_key = n.variant_key AND o.hour = n.hour
         WHERE (n.flag_id IS NULL OR o.flag_id IS NULL OR n.count <> o.count)
           AND EXISTS (SELECT 1 FROM flags f WHERE f.id = COALESCE(n.flag_id, o.flag_id));
    END IF;
    IF flag_ids IS NOT NULL THEN
        PERFORM ensign_usage_roll_up_apply(flag_ids, hours, deltas, seen);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER usage_counters_roll_up ON usage_counters;
DROP FUNCTION ensign_roll_up_usage();

CREATE TRIGGER usage_counters_roll_up_insert
    AFTER INSERT ON usage_counters REFERENCING NEW TABLE AS usage_new
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_roll_up_usage_statement();
CREATE TRIGGER usage_counters_roll_up_update
    AFTER UPDATE ON usage_counters REFERENCING OLD TABLE AS usage_old NEW TABLE AS usage_new
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_roll_up_usage_statement();
CREATE TRIGGER usage_counters_roll_up_delete
    AFTER DELETE ON usage_counters REFERENCING OLD TABLE AS usage_old
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_roll_up_usage_statement();

-- Recomputes the flag_usage_series rows of the given flags (those that
-- still exist) from flag_usage_hours, as ensign_usage_series_refresh does
-- for one: the newest hour-aligned hour and the 24 counts up to it, or no
-- row when there is none. The flags are joined from unnest(), one index
-- probe each: `id = ANY (array)` compares every row against the whole
-- array when the plan scans flags (a parameter's array is not hashed).
CREATE FUNCTION ensign_usage_series_refresh_many(flag_ids uuid[]) RETURNS void
    LANGUAGE sql
    AS $$
    WITH wanted AS (
        SELECT DISTINCT u.flag_id FROM unnest(flag_ids) AS u(flag_id)
          JOIN flags f ON f.id = u.flag_id
    ), newest AS (
        SELECT w.flag_id,
               (SELECT max(h.hour) FROM flag_usage_hours h
                 WHERE h.flag_id = w.flag_id AND h.hour = date_trunc('hour', h.hour, 'UTC'))
                   AS newest_hour
          FROM wanted w
    ), gone AS (
        DELETE FROM flag_usage_series s USING newest n
         WHERE s.flag_id = n.flag_id AND n.newest_hour IS NULL
    )
    INSERT INTO flag_usage_series AS s (flag_id, newest_hour, counts, counts_text)
    SELECT n.flag_id, n.newest_hour, c.counts, array_to_string(c.counts, ',')
      FROM newest n
     CROSS JOIN LATERAL (
        SELECT array_agg(COALESCE(h.count, 0) ORDER BY g.g) AS counts
          FROM generate_series(0, 23) AS g
          LEFT JOIN flag_usage_hours h
                 ON h.flag_id = n.flag_id AND h.hour = n.newest_hour - (23 - g.g) * interval '1 hour'
     ) AS c
     WHERE n.newest_hour IS NOT NULL
    ON CONFLICT (flag_id) DO UPDATE
        SET newest_hour = EXCLUDED.newest_hour, counts = EXCLUDED.counts,
            counts_text = EXCLUDED.counts_text
$$;

-- The statement trigger of flag_usage_hours: every flag with a row
-- inserted, updated or deleted by the statement is recomputed.
CREATE FUNCTION ensign_roll_up_usage_series_statement() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    flag_ids uuid[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        flag_ids := ARRAY(SELECT DISTINCT n.flag_id FROM hours_new n);
    ELSIF TG_OP = 'DELETE' THEN
        flag_ids := ARRAY(SELECT DISTINCT o.flag_id FROM hours_old o);
    ELSE
        flag_ids := ARRAY(SELECT n.flag_id FROM hours_new n
                          UNION SELECT o.flag_id FROM hours_old o);
    END IF;
    IF cardinality(flag_ids) > 0 THEN
        PERFORM ensign_usage_series_refresh_many(flag_ids);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER flag_usage_hours_series ON flag_usage_hours;
DROP FUNCTION ensign_roll_up_usage_series();

CREATE TRIGGER flag_usage_hours_series_insert
    AFTER INSERT ON flag_usage_hours REFERENCING NEW TABLE AS hours_new
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_roll_up_usage_series_statement();
CREATE TRIGGER flag_usage_hours_series_update
    AFTER UPDATE ON flag_usage_hours REFERENCING OLD TABLE AS hours_old NEW TABLE AS hours_new
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_roll_up_usage_series_statement();
CREATE TRIGGER flag_usage_hours_series_delete
    AFTER DELETE ON flag_usage_hours REFERENCING OLD TABLE AS hours_old
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_roll_up_usage_series_statement();
