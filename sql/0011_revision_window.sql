-- 0011_revision_window.sql - the flag detail shows the newest 20
-- revisions, not 100; the whole history is read page by page from
-- GET /v1/orgs/{org}/flags/{key}/revisions (src/api/flagrevisions.c,
-- doc/choices.md, "Flag detail").
--
-- Everything 0010 says of flag_revision_pages holds with 20 for 100: the
-- trigger function is the same but for its window, and every page is
-- built again from the revisions (the newest 20 of each flag). The
-- storage settings of 0010 stay.
--
-- Why 20: a detail answered the window whatever the history, so with
-- 100 a flag with 500 revisions carried 20 KB more than one with 5, and
-- its detail answered 0.92x as many requests per second (contrib/bench,
-- management part); 20 is what a "recent changes" view shows, the body
-- grows by 3 KB at most, and the trigger splices and stores a fifth of
-- the text on every write.

CREATE OR REPLACE FUNCTION ensign_revision_pages_refresh() RETURNS trigger
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
            EXIT WHEN p >= 20; -- past a full page, and so is every older one
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
            IF n = 20 THEN -- the 21st goes
                items := substring(items FROM 1 FOR octet_length(items) - cur.lengths[21] - 2);
                cur.times := cur.times[1:20];
                cur.ids := cur.ids[1:20];
                cur.lengths := cur.lengths[1:20];
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

-- Other writers wait (one transaction per migration) while the pages are
-- built again.
LOCK TABLE revisions IN SHARE ROW EXCLUSIVE MODE;
DELETE FROM flag_revision_pages;
INSERT INTO flag_revision_pages (flag_id, page, times, ids, lengths)
SELECT f.id,
       '[' || string_agg(s.j, ', ' ORDER BY s.created_at DESC, s.id DESC) || ']',
       array_agg(s.created_at ORDER BY s.created_at DESC, s.id DESC),
       array_agg(s.id ORDER BY s.created_at DESC, s.id DESC),
       array_agg(octet_length(s.j) ORDER BY s.created_at DESC, s.id DESC)
  FROM flags f
 CROSS JOIN LATERAL (SELECT r.created_at, r.id, ensign_revision_json(r)::text AS j
                       FROM revisions r WHERE r.flag_id = f.id
                      ORDER BY r.created_at DESC, r.id DESC LIMIT 20) AS s
 GROUP BY f.id;
