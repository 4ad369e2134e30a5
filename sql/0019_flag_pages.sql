-- 0019_flag_pages.sql - the pages and the search of the flag list
-- (GET /v1/orgs/{org}/flags with limit, cursor and q: src/api/flaglist.c,
-- doc/choices.md "The flag list pages").
--
-- - The list is a keyset on (org_id, key): the unique index of 0001 walks
--   the active flags of a page in order and stops after limit + 1. The
--   archived ones have a partial index of their own, so that a few archived
--   flags among 100,000 active ones are found without walking those.
-- - q matches the key, the name or one tag, case-insensitive, as a
--   substring. ensign_flag_search_text joins the three, lower-cased, one per
--   line; the GIN index holds the organization (btree_gin) and the text's
--   trigrams (pg_trgm, 0003), so that a q of three characters or more finds
--   its flags inside one organization without reading the others or its
--   own. A shorter q has no trigram to look up: the list walks the keyset
--   and tests each flag (flaglist.c chooses by q's length).
--
-- Invariant: ensign_flag_search_text is the text the index holds and the
-- text the statements test; the statements also test each part on its own,
-- so that a q spanning two lines matches nothing.

CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE FUNCTION ensign_flag_search_text(key text, name text, tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT lower(key || E'\n' || name || E'\n' || array_to_string(tags, E'\n')) $$;

CREATE INDEX flags_search_idx ON flags
    USING gin (org_id, ensign_flag_search_text(key, name, tags) gin_trgm_ops);

CREATE INDEX flags_archived_page_idx ON flags (org_id, key) WHERE archived_at IS NOT NULL;
