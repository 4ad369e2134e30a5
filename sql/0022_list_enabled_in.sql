-- 0022_list_enabled_in.sql - the flag list's enabledIn, kept on the flag
-- (src/api/flaglist.c; doc/choices.md, "The flag list page without a
-- lookup per flag").
--
-- flags.enabled_in_json is the JSON text of the keys of the environments
-- where the flag is enabled, in key order, as the list wrote it per row
-- before (coalesce(array_to_json(array_agg(e.key ORDER BY e.key))::text,
-- '[]'): ["development","production"]). The list looked it up per flag: two
-- or three index scans of flag_environments and environments for each of a
-- page's 1,000 flags, 10,000 buffer accesses, two thirds of the page's
-- execution; on a data set larger than shared_buffers those were reads of
-- random index leaves. Now the page reads the flags' own rows only.
--
-- Kept by triggers on flag_environments, written only when it changes:
-- - a row inserted enabled (a new flag configured enabled, or a new
--   environment configuring every flag: enabled is false then, nothing to
--   do), a row deleted while enabled (an environment or a flag deleted),
--   or enabled changed. flag_id and environment_id of a row never change
--   (its primary key), nor does an environment's key (environments are
--   only created and deleted).
-- - The UPDATE of flags is like production_value's (sql/0012): one more
--   row version of the flag on a toggle, in the same transaction.
--
-- Invariant: enabled_in_json = ensign_flag_enabled_in(id) on every row.

ALTER TABLE flags ADD COLUMN enabled_in_json text NOT NULL DEFAULT '[]';

CREATE FUNCTION ensign_flag_enabled_in(flag uuid) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(array_to_json(array_agg(e.key ORDER BY e.key))::text, '[]')
      FROM flag_environments fe JOIN environments e ON e.id = fe.environment_id
     WHERE fe.flag_id = flag AND fe.enabled
$$;

-- The first values, without moving the configuration generation: the
-- snapshot does not hold the column, so no organization needs a rebuild for
-- it (the bump trigger would stamp every organization that has a flag).
ALTER TABLE flags DISABLE TRIGGER config_generation_bump;
UPDATE flags f SET enabled_in_json = x.keys
  FROM (SELECT fe.flag_id, array_to_json(array_agg(e.key ORDER BY e.key))::text AS keys
          FROM flag_environments fe JOIN environments e ON e.id = fe.environment_id
         WHERE fe.enabled
         GROUP BY fe.flag_id) AS x
 WHERE x.flag_id = f.id;
ALTER TABLE flags ENABLE TRIGGER config_generation_bump;

CREATE FUNCTION ensign_flags_enabled_in() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    flag uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.flag_id ELSE NEW.flag_id END;
    keys text := ensign_flag_enabled_in(flag);
BEGIN
    UPDATE flags SET enabled_in_json = keys
     WHERE id = flag AND enabled_in_json IS DISTINCT FROM keys;
    RETURN NULL;
END
$$;

CREATE TRIGGER flag_environments_enabled_in_insert
    AFTER INSERT ON flag_environments
    FOR EACH ROW WHEN (NEW.enabled)
    EXECUTE FUNCTION ensign_flags_enabled_in();
CREATE TRIGGER flag_environments_enabled_in_delete
    AFTER DELETE ON flag_environments
    FOR EACH ROW WHEN (OLD.enabled)
    EXECUTE FUNCTION ensign_flags_enabled_in();
CREATE TRIGGER flag_environments_enabled_in_update
    AFTER UPDATE ON flag_environments
    FOR EACH ROW WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled)
    EXECUTE FUNCTION ensign_flags_enabled_in();
