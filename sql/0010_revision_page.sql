-- 0010_revision_page.sql - each flag's revisions array as finished JSON
-- text, so the flag detail (src/api/flagdetail.c) reads one value instead
-- of 100 revision rows (doc/choices.md, "Flag detail").
--
-- Invariants kept here:
-- - flag_revision_pages.page = json_agg(ensign_revision_json(r) ORDER BY
--   r.created_at DESC, r.id DESC)::text over the flag's newest 100
--   revisions (the same order), byte for byte what the detail showed
--   before, at the end of every statement that inserted revisions; times,
--   ids and lengths hold the created_at, the id and the length in bytes
--   of each item of page (newest first). A flag without revisions has no
--   row (the detail reads '[]').
-- - Revisions are only ever inserted: nothing updates a revision's
--   action, summary, changes, user_name or created_at (user_name is the
--   actor's name at the time), so an item's text never changes; they go
--   away with their flag, whose row here goes too (ON DELETE CASCADE).
--   environment_id and user_id, which the JSON form does not show, may be
--   set NULL by their own deletions; no page follows them.
-- - Kept by a statement trigger on revisions (a bulk insert may write
--   several in one statement): each new revision of a flag, newest first,
--   is spliced into the page where its (created_at, id) falls among the
--   items' (usually in front: one revision stamped now()), and the items
--   past the 100th are cut off; a revision older than a full page's 100
--   items is not shown. So an older transaction committing after a newer
--   one, ties within a transaction and a backdated insert land where the
--   former query put them, and the page is the newest 100 of its old
--   items and the new revisions, that is of all the flag's revisions.
-- - Concurrent writers of one flag are serialized on the page row: it is
--   read and written only after it is locked, and FOR UPDATE returns the
--   version the previous writer committed (READ COMMITTED, the server's
--   level), so no committed revision is left out. Rows are locked in flag
--   id order.
--
-- Storage: a page of 100 revisions (about 20 KB) is always stored out of
-- line (TOAST). Compressed with lz4 when the server has it (4 KB: a write
-- stores 3 chunks instead of 11, about 80 us less, and a read costs what
-- an uncompressed one does); otherwise uncompressed (EXTERNAL), since
-- pglz costs on both sides (about 8 us more per read, 25 us per write).
-- The three arrays (about 2.8 KB) stay in the row uncompressed
-- (toast_tuple_target): at the default 2 KB target they were compressed
-- and ids moved out of line on every write, about 50 us more a write.

CREATE TABLE flag_revision_pages (
    flag_id uuid PRIMARY KEY REFERENCES flags (id) ON DELETE CASCADE,
    page    text NOT NULL DEFAULT '[]',
    times   timestamptz[] NOT NULL DEFAULT '{}',
    ids     uuid[] NOT NULL DEFAULT '{}',
    lengths integer[] NOT NULL DEFAULT '{}'
) WITH (toast_tuple_target = 4080);
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

-- The splicing works on bytes in the database's encoding (convert_to to
-- it copies, convert_from checks): a substring counted in characters
-- walks the 20 KB page character by character. A generic plan: custom
-- plans would be planned again on every write, and planning was most of
-- a write's cost here.
CREATE FUNCTION ensign_revision_pages_refresh() RETURNS trigger
    LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan
    AS $$
DECLARE
    enc name := getdatabaseencoding();
    flag uuid;
    cur flag_revision_pages;
    items bytea;  -- the page's items and their ", " separators, no brackets
    rev record;
    n integer;    -- items on the page
    p integer;    -- items newer than rev, which stays behind them
    head integer; -- the bytes of those p items with their separators
BEGIN
    FOR flag IN SELECT DISTINCT nr.flag_id FROM new_revisions nr ORDER BY nr.flag_id LOOP
        INSERT INTO flag_revision_pages (flag_id) VALUES (flag) ON CONFLICT (flag_id) DO NOTHING;
        SELECT * INTO cur FROM flag_revision_pages pg WHERE pg.flag_id = flag FOR UPDATE;
        items := substring(convert_to(cur.page, enc) FROM 2 FOR octet_length(cur.page) - 2);
        FOR rev IN SELECT r.created_at, r.id, convert_to(ensign_revision_json(r)::text, enc) AS item
                     FROM revisions r
                    WHERE r.id IN (SELECT nr.id FROM new_revisions nr WHERE nr.flag_id = flag)
                    ORDER BY r.created_at DESC, r.id DESC LOOP
            p := (SELECT count(*) FROM unnest(cur.times, cur.ids) AS t (at, id)
                   WHERE (t.at, t.id) > (rev.created_at, rev.id));
            EXIT WHEN p >= 100; -- past a full page, and so is every older one
            n := cardinality(cur.ids);
            head := COALESCE((SELECT sum(l) FROM unnest(cur.lengths[1:p]) AS l) + 2 * (p - 1), 0);
            items := substring(items FROM 1 FOR head)
                     || CASE WHEN p > 0 THEN '\x2c20'::bytea ELSE '' END
                     || rev.item
                     || CASE WHEN p < n
                             THEN '\x2c20'::bytea
                                  || substring(items FROM head + CASE WHEN p > 0 THEN 3 ELSE 1 END)
                             ELSE '' END;
            cur.times := cur.times[1:p] || rev.created_at || cur.times[p + 1:n];
            cur.ids := cur.ids[1:p] || rev.id || cur.ids[p + 1:n];
            cur.lengths := cur.lengths[1:p] || octet_length(rev.item) || cur.lengths[p + 1:n];
            IF n = 100 THEN -- the 101st goes
                items := substring(items FROM 1 FOR octet_length(items) - cur.lengths[101] - 2);
                cur.times := cur.times[1:100];
                cur.ids := cur.ids[1:100];
                cur.lengths := cur.lengths[1:100];
            END IF;
        END LOOP;
        UPDATE flag_revision_pages pg
           SET page = convert_from('\x5b'::bytea || items || '\x5d'::bytea, enc),
               times = cur.times, ids = cur.ids, lengths = cur.lengths
         WHERE pg.flag_id = flag;
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

INSERT INTO flag_revision_pages (flag_id, page, times, ids, lengths)
SELECT f.id,
       '[' || string_agg(s.j, ', ' ORDER BY s.created_at DESC, s.id DESC) || ']',
       array_agg(s.created_at ORDER BY s.created_at DESC, s.id DESC),
       array_agg(s.id ORDER BY s.created_at DESC, s.id DESC),
       array_agg(octet_length(s.j) ORDER BY s.created_at DESC, s.id DESC)
  FROM flags f
 CROSS JOIN LATERAL (SELECT r.created_at, r.id, ensign_revision_json(r)::text AS j
                       FROM revisions r WHERE r.flag_id = f.id
                      ORDER BY r.created_at DESC, r.id DESC LIMIT 100) AS s
 GROUP BY f.id;
