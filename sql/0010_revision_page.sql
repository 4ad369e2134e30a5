-- 0010_revision_page.sql - each flag's revisions array as finished JSON
-- text, so the flag detail (src/api/flagdetail.c) reads one value instead
-- of 100 revision rows (doc/choices.md, "Flag detail").
--
-- Invariants kept here:
-- - flag_revision_pages.page = json_agg(ensign_revision_json(r) ORDER BY
--   r.created_at DESC, r.id DESC)::text over the flag's newest 100
--   revisions (the same order), byte for byte what the detail showed
--   before, at the end of every statement that inserted revisions; lengths
--   holds the length in bytes of each item of page (newest first),
--   newest_at and newest_id the (created_at, id) of its first. A flag
--   without revisions has no row (the detail reads '[]').
-- - Revisions are only ever inserted: nothing updates a revision's
--   action, summary, changes, user_name or created_at (user_name is the
--   actor's name at the time), and they go away with their flag, whose
--   row here goes too (ON DELETE CASCADE). environment_id and user_id,
--   which the JSON form does not show, may be set NULL by their own
--   deletions; no page follows them.
-- - Kept by a statement trigger on revisions (a rule-set replacement or
--   a bulk insert may write several in one statement). When every new
--   revision of a flag sorts after its page's newest (the usual write:
--   one revision stamped now()), their items are put in front of the
--   page and the items past the 100th cut off with lengths; otherwise (an
--   older transaction committing after a newer one, a backdated insert)
--   the page is recomputed from the newest 100 revisions.
-- - Concurrent writers of one flag are serialized on the page row: it is
--   read and written only after it is locked (FOR UPDATE returns the
--   version the previous writer committed, and a recomputation runs in a
--   later statement whose snapshot sees every revision committed before
--   the lock was granted), so no committed revision is left out (READ
--   COMMITTED, the server's level). Rows are locked in flag id order.
--
-- Storage: a page of 100 revisions (about 20 KB) is always stored out of
-- line (TOAST). Compressed with lz4 when the server has it (4 KB: a write
-- stores 3 chunks instead of 11, about 80 us less, and a read costs what
-- an uncompressed one does); otherwise uncompressed (EXTERNAL), since
-- pglz costs on both sides (about 8 us more per read, 25 us per write).

CREATE TABLE flag_revision_pages (
    flag_id   uuid PRIMARY KEY REFERENCES flags (id) ON DELETE CASCADE,
    page      text NOT NULL DEFAULT '[]',
    lengths   integer[] NOT NULL DEFAULT '{}',
    newest_at timestamptz NULL,
    newest_id uuid NULL
);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
                WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE flag_revision_pages ALTER COLUMN page SET COMPRESSION lz4;
    ELSE
        ALTER TABLE flag_revision_pages ALTER COLUMN page SET STORAGE EXTERNAL;
    END IF;
END
$$;

-- The items (JSON texts without the brackets, ", " between them) of the
-- newest 100 revisions of flag that sort after (after_at, after_id),
-- newest first, with the length in bytes of each item (cut as bytes: a
-- substring counted in characters walks the 20 KB page character by
-- character) and the (created_at, id) of
-- the first; NULLs when there is none. ('-infinity', the nil uuid): the
-- newest 100 of all. created_at >= after_at bounds the index scan.
CREATE FUNCTION ensign_revision_items(flag uuid, after_at timestamptz, after_id uuid,
                                      OUT items text, OUT lengths integer[],
                                      OUT newest_at timestamptz, OUT newest_id uuid)
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    -- PL/pgSQL, not SQL, and a generic plan: its plan is kept for the
    -- session, where a SQL function called by the trigger would be planned
    -- again on every call, and so would a custom plan (the generic one
    -- looks dearer to the planner, which cannot see that after_at is the
    -- page's newest); planning was most of a write's cost here
    SET plan_cache_mode = force_generic_plan
    AS $$
BEGIN
    SELECT string_agg(s.j, ', ' ORDER BY s.created_at DESC, s.id DESC),
           array_agg(octet_length(s.j) ORDER BY s.created_at DESC, s.id DESC),
           max(s.created_at),
           (array_agg(s.id ORDER BY s.created_at DESC, s.id DESC))[1]
      INTO items, lengths, newest_at, newest_id
      FROM (SELECT r.created_at, r.id, ensign_revision_json(r)::text AS j
              FROM revisions r
             WHERE r.flag_id = flag AND r.created_at >= after_at
               AND (r.created_at, r.id) > (after_at, after_id)
             ORDER BY r.created_at DESC, r.id DESC LIMIT 100) AS s;
END
$$;

CREATE FUNCTION ensign_revision_pages_refresh() RETURNS trigger
    LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan
    AS $$
DECLARE
    flag uuid;
    cur flag_revision_pages;
    fresh record;
    kept integer;
    tail text := '';
BEGIN
    FOR flag IN SELECT DISTINCT n.flag_id FROM new_revisions n ORDER BY n.flag_id LOOP
        INSERT INTO flag_revision_pages (flag_id) VALUES (flag) ON CONFLICT (flag_id) DO NOTHING;
        SELECT * INTO cur FROM flag_revision_pages p WHERE p.flag_id = flag FOR UPDATE;
        IF cur.newest_at IS NULL
           OR EXISTS (SELECT 1 FROM new_revisions n
                       WHERE n.flag_id = flag
                         AND (n.created_at, n.id) <= (cur.newest_at, cur.newest_id)) THEN
            -- not all newer than the page: recompute it from the revisions
            cur.newest_at := '-infinity';
            cur.newest_id := '00000000-0000-0000-0000-000000000000';
            cur.lengths := '{}';
        END IF;
        SELECT * INTO fresh FROM ensign_revision_items(flag, cur.newest_at, cur.newest_id);
        -- the page's first items that stay, after the "[" and with their
        -- ", " separators, cut as bytes
        kept := LEAST(cardinality(cur.lengths), 100 - cardinality(fresh.lengths));
        tail := '';
        IF kept > 0 THEN
            tail := ', ' || convert_from(substring(convert_to(cur.page, getdatabaseencoding())
                                                   FROM 2 FOR (SELECT sum(l)::integer
                                                                 FROM unnest(cur.lengths[1:kept]) AS l)
                                                              + 2 * (kept - 1)),
                                         getdatabaseencoding());
        END IF;
        UPDATE flag_revision_pages p
           SET page = '[' || fresh.items || tail || ']',
               lengths = fresh.lengths || cur.lengths[1:kept],
               newest_at = fresh.newest_at,
               newest_id = fresh.newest_id
         WHERE p.flag_id = flag;
    END LOOP;
    RETURN NULL;
END
$$;

-- Before the backfill: a revision a running server inserts meanwhile
-- waits for this transaction (CREATE TRIGGER locks revisions), then
-- passes through the trigger.
CREATE TRIGGER revisions_page
    AFTER INSERT ON revisions REFERENCING NEW TABLE AS new_revisions
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_revision_pages_refresh();

INSERT INTO flag_revision_pages (flag_id, page, lengths, newest_at, newest_id)
SELECT f.id, '[' || i.items || ']', i.lengths, i.newest_at, i.newest_id
  FROM flags f
 CROSS JOIN LATERAL ensign_revision_items(f.id, '-infinity',
                                          '00000000-0000-0000-0000-000000000000') AS i
 WHERE i.items IS NOT NULL;
