-- 0008_mgmt_speed.sql - a per-flag roll-up of the last 24 hourly usage
-- counts, so the flag list (src/api/flaglist.c) reads one row per flag
-- instead of 24 rows of flag_usage_hours (24,000 rows for 1,000 flags were
-- most of the list's time; doc/choices.md, "Management speed").
--
-- Invariants kept here:
-- - flag_usage_series has a row for a flag exactly when flag_usage_hours
--   has an hour-aligned (UTC) row for it; newest_hour is the latest such
--   hour and counts[1..24] are the counts of newest_hour - 23 hours ..
--   newest_hour (0 for an hour without a row), as flag_usage_hours holds
--   them at the end of every statement that changed it.
-- - A reader shifts the array to its own current hour; when newest_hour is
--   later than the reader's current hour (a clock ahead), the reader falls
--   back to ensign_usage_counts(flag, its current hour).
-- - Maintained by a row trigger on flag_usage_hours that recomputes the
--   flag's row from flag_usage_hours (at most 24 rows through the primary
--   key), so no delta can drift.

CREATE TABLE flag_usage_series (
    flag_id     uuid PRIMARY KEY REFERENCES flags (id) ON DELETE CASCADE,
    newest_hour timestamptz NOT NULL,
    counts      bigint[] NOT NULL CHECK (cardinality(counts) = 24)
);

-- The counts of flag's 24 hours up to newest (oldest first, 0 for an hour
-- without a row). Not inlined: the list calls it only for a series ahead
-- of the clock, and its planner cost stays that of one function call.
CREATE FUNCTION ensign_usage_counts(flag uuid, newest timestamptz) RETURNS bigint[]
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT array_agg(COALESCE(h.count, 0) ORDER BY g.g)
            FROM generate_series(0, 23) AS g
            LEFT JOIN flag_usage_hours h
                   ON h.flag_id = flag AND h.hour = newest - (23 - g.g) * interval '1 hour' $$;

CREATE FUNCTION ensign_usage_series_refresh(flag uuid) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    newest timestamptz;
BEGIN
    SELECT max(h.hour) INTO newest FROM flag_usage_hours h
     WHERE h.flag_id = flag AND h.hour = date_trunc('hour', h.hour, 'UTC');
    IF newest IS NULL THEN
        DELETE FROM flag_usage_series WHERE flag_id = flag;
        RETURN;
    END IF;
    INSERT INTO flag_usage_series AS s (flag_id, newest_hour, counts)
    VALUES (flag, newest, ensign_usage_counts(flag, newest))
    ON CONFLICT (flag_id) DO UPDATE
        SET newest_hour = EXCLUDED.newest_hour, counts = EXCLUDED.counts;
END
$$;

CREATE FUNCTION ensign_roll_up_usage_series() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.count = OLD.count AND NEW.hour = OLD.hour
       AND NEW.flag_id = OLD.flag_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') AND EXISTS (SELECT 1 FROM flags WHERE id = OLD.flag_id) THEN
        PERFORM ensign_usage_series_refresh(OLD.flag_id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND (TG_OP = 'INSERT' OR NEW.flag_id <> OLD.flag_id) THEN
        PERFORM ensign_usage_series_refresh(NEW.flag_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER flag_usage_hours_series
    AFTER INSERT OR UPDATE OR DELETE ON flag_usage_hours
    FOR EACH ROW EXECUTE FUNCTION ensign_roll_up_usage_series();

SELECT ensign_usage_series_refresh(f.id) FROM (SELECT DISTINCT flag_id AS id FROM flag_usage_hours) AS f;
