-- 0009_list_columns.sql - two columns the flag list (src/api/flaglist.c)
-- reads instead of computing per row (doc/choices.md, "Management speed").
--
-- - flag_environments.default_variant_key: the variant of the default
--   serve's single form (default_serve ->> 'variant'), NULL for a rollout;
--   generated and stored, so the list's join to the production default's
--   variant compares a column instead of taking a jsonb member per row
--   (about 1 ms of a 1,000-flag list).
-- - flag_usage_series.counts_text: the 24 counts as text ("3,0,12,..."),
--   written with counts by ensign_usage_series_refresh (which replaces
--   0008's), so the list does not format 24,000 numbers per request
--   (about 0.6 ms); written once per usage flush instead.
--
-- - flags.tags_json: the tags as the JSON text the list returns
--   (to_jsonb(tags)::text), kept by a trigger on every write of a flag's
--   tags, so the list copies it instead of building a jsonb per flag
--   (about 0.2 ms of a 1,000-flag list).
--
-- Invariants: counts_text = array_to_string(counts, ',') and
-- tags_json = to_jsonb(tags)::text on every row.

ALTER TABLE flag_environments
    ADD COLUMN default_variant_key text GENERATED ALWAYS AS (default_serve ->> 'variant') STORED;

ALTER TABLE flag_usage_series ADD COLUMN counts_text text;
UPDATE flag_usage_series SET counts_text = array_to_string(counts, ',');
ALTER TABLE flag_usage_series ALTER COLUMN counts_text SET NOT NULL;

CREATE OR REPLACE FUNCTION ensign_usage_series_refresh(flag uuid) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    newest timestamptz;
    c bigint[];
BEGIN
    SELECT max(h.hour) INTO newest FROM flag_usage_hours h
     WHERE h.flag_id = flag AND h.hour = date_trunc('hour', h.hour, 'UTC');
    IF newest IS NULL THEN
        DELETE FROM flag_usage_series WHERE flag_id = flag;
        RETURN;
    END IF;
    c := ensign_usage_counts(flag, newest);
    INSERT INTO flag_usage_series AS s (flag_id, newest_hour, counts, counts_text)
    VALUES (flag, newest, c, array_to_string(c, ','))
    ON CONFLICT (flag_id) DO UPDATE
        SET newest_hour = EXCLUDED.newest_hour, counts = EXCLUDED.counts,
            counts_text = EXCLUDED.counts_text;
END
$$;

ALTER TABLE flags ADD COLUMN tags_json text;
UPDATE flags SET tags_json = to_jsonb(tags)::text;
ALTER TABLE flags ALTER COLUMN tags_json SET NOT NULL;

CREATE FUNCTION ensign_flags_tags_json() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.tags_json := to_jsonb(NEW.tags)::text;
    RETURN NEW;
END
$$;

CREATE TRIGGER flags_tags_json
    BEFORE INSERT OR UPDATE OF tags ON flags
    FOR EACH ROW EXECUTE FUNCTION ensign_flags_tags_json();
