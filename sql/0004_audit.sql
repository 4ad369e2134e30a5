-- 0004_audit.sql - the audit log's tamper-evident chain (src/accounts/audit.c,
-- audit_record.h, src/ctl/auditverify.c).
--
-- Every audit event of an organization is a link of one hash chain:
--
--   hash = lower hex SHA-256( prev_hash || canonical(event) )
--
-- prev_hash is the hash of the organization's previous event (64 zeros
-- for its first), canonical(event) is the text ensign_audit_canonical()
-- builds below (the format is doc/choices.md's "Audit log"; ensignctl audit
-- verify rebuilds it in C from the columns and must agree byte for byte).
--
-- Invariants kept here:
-- - seq numbers an organization's events 1, 2, 3, ... without gaps, in
--   chain order; (org_id, seq) is unique.
-- - audit_chain_heads holds, per organization, the seq and hash of its
--   last event (moved at the end of each inserting statement). A BEFORE
--   INSERT trigger locks that row (FOR UPDATE) for the rest of the
--   inserting transaction, so concurrent writers of one organization take
--   turns and the chain never forks; organizations do not wait for each
--   other.
-- - nothing a later write does changes a hashed column: the actor columns
--   have no foreign key (a deleted user or token keeps its id and name in
--   the log), so ON DELETE SET NULL can never rewrite history.
-- - location is where in the organization the event happened: the path of
--   the changed resource relative to the organization ("flags/checkout",
--   "sdk-keys/<id>"); Ensign has no geolocation database.

ALTER TABLE audit_events DROP CONSTRAINT audit_events_actor_id_fkey;

ALTER TABLE audit_events
    ADD COLUMN actor_token_id uuid NULL,
    ADD COLUMN seq bigint NULL,
    ADD COLUMN prev_hash text NULL CHECK (ensign_digest_ok(prev_hash)),
    ADD COLUMN hash text NULL CHECK (ensign_digest_ok(hash));

CREATE TABLE audit_chain_heads (
    org_id uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    seq    bigint NOT NULL CHECK (seq >= 0),
    hash   text NOT NULL CHECK (ensign_digest_ok(hash))
);

-- One field of the canonical text: "~," for NULL, else its length in UTF-8
-- bytes (whatever the database encoding: the hash is over UTF-8), ":", the
-- value and ",".
CREATE FUNCTION ensign_audit_field(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN value IS NULL THEN '~,'
                      ELSE octet_length(convert_to(value, 'UTF8')) || ':' || value || ',' END $$;

-- The time as the chain hashes it: UTC, microseconds.
CREATE FUNCTION ensign_audit_time(t timestamptz) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

CREATE FUNCTION ensign_audit_canonical(e audit_events) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT 'ensign-audit-v1,'
                 || ensign_audit_field(e.org_id::text) || ensign_audit_field(e.seq::text)
                 || ensign_audit_field(e.id::text)
                 || ensign_audit_field(ensign_audit_time(e.created_at))
                 || ensign_audit_field(e.actor_id::text)
                 || ensign_audit_field(e.actor_token_id::text)
                 || ensign_audit_field(e.actor_name) || ensign_audit_field(e.action)
                 || ensign_audit_field(e.summary) || ensign_audit_field(host(e.ip))
                 || ensign_audit_field(e.location) $$;

CREATE FUNCTION ensign_audit_hash(prev_hash text, e audit_events) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT encode(sha256(convert_to(prev_hash || ensign_audit_canonical(e), 'UTF8')),
                        'hex') $$;

-- Links NEW to the end of its organization's chain. The chain head is
-- locked (FOR UPDATE, until commit: concurrent writers of the organization
-- wait here, and under REPEATABLE READ get a serialization failure rather
-- than a fork) but written only once per statement (ensign_audit_advance),
-- so a statement adding many events does not rewrite one row per event.
-- The previous link is the newest event past the head (added earlier in
-- this statement), else the head itself: an event deleted at the end
-- leaves a gap that the next event does not close.
CREATE FUNCTION ensign_audit_link() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    head audit_chain_heads;
    last_seq bigint;
    last_hash text;
BEGIN
    SELECT * INTO head FROM audit_chain_heads WHERE org_id = NEW.org_id FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO audit_chain_heads (org_id, seq, hash)
             VALUES (NEW.org_id, 0, repeat('0', 64))
        ON CONFLICT (org_id) DO NOTHING;
        SELECT * INTO head FROM audit_chain_heads WHERE org_id = NEW.org_id FOR UPDATE;
    END IF;
    SELECT e.seq, e.hash INTO last_seq, last_hash FROM audit_events e
     WHERE e.org_id = NEW.org_id AND e.seq > head.seq ORDER BY e.seq DESC LIMIT 1;
    IF NOT FOUND THEN
        last_seq := head.seq;
        last_hash := head.hash;
    END IF;
    NEW.seq := last_seq + 1;
    NEW.prev_hash := last_hash;
    NEW.hash := ensign_audit_hash(last_hash, NEW);
    RETURN NEW;
END
$$;

-- Moves each organization's head to its newest event of the statement.
CREATE FUNCTION ensign_audit_advance() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE audit_chain_heads h SET seq = x.seq, hash = x.hash
      FROM (SELECT DISTINCT ON (a.org_id) a.org_id, a.seq, a.hash
              FROM added a ORDER BY a.org_id, a.seq DESC) AS x
     WHERE h.org_id = x.org_id AND x.seq > h.seq;
    RETURN NULL;
END
$$;

-- The actor's name when the writer did not give one. A function, so that a
-- statement's own CTE named "users" cannot shadow the table.
CREATE FUNCTION ensign_audit_user_name(id uuid) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT u.name FROM users u WHERE u.id = $1 $$;

-- Records one event from a PL/pgSQL write function (sql/0003): actor is the
-- parameter audit_actor_init() builds (src/mgmt/audit_record.h); org,
-- when not NULL, overrides its org_id (an organization being created).
CREATE FUNCTION ensign_audit_record(actor jsonb, org uuid, action text, summary text,
                                    location text)
    RETURNS void
    LANGUAGE sql
    AS $$ INSERT INTO audit_events (org_id, actor_id, actor_token_id, actor_name, ip, action,
                                    summary, location)
          SELECT COALESCE($2, a.org_id), a.user_id, a.token_id,
                 COALESCE(a.name, ensign_audit_user_name(a.user_id)),
                 a.ip, $3, $4, $5
            FROM jsonb_to_record($1)
                 AS a(org_id uuid, user_id uuid, token_id uuid, name text, ip inet) $$;

-- Events recorded before this migration (none are written by earlier
-- versions, but a hand-made row must not stay outside the chain).
DO $$
DECLARE
    e audit_events;
    org uuid := NULL;
    n bigint;
    prev text;
BEGIN
    FOR e IN SELECT * FROM audit_events ORDER BY org_id, created_at, id LOOP
        IF org IS DISTINCT FROM e.org_id THEN
            org := e.org_id;
            n := 0;
            prev := repeat('0', 64);
        END IF;
        n := n + 1;
        e.seq := n;
        e.prev_hash := prev;
        e.hash := ensign_audit_hash(prev, e);
        UPDATE audit_events SET seq = e.seq, prev_hash = e.prev_hash, hash = e.hash
         WHERE id = e.id;
        prev := e.hash;
    END LOOP;
    INSERT INTO audit_chain_heads (org_id, seq, hash)
    SELECT DISTINCT ON (x.org_id) x.org_id, x.seq, x.hash
      FROM audit_events x ORDER BY x.org_id, x.seq DESC;
END
$$;

ALTER TABLE audit_events
    ALTER COLUMN seq SET NOT NULL,
    ALTER COLUMN prev_hash SET NOT NULL,
    ALTER COLUMN hash SET NOT NULL;

CREATE TRIGGER audit_events_link BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION ensign_audit_link();
CREATE TRIGGER audit_events_advance AFTER INSERT ON audit_events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_audit_advance();

-- The list walks an organization's events newest first (keyset on seq).
DROP INDEX audit_events_org_idx;
CREATE UNIQUE INDEX audit_events_org_seq_key ON audit_events (org_id, seq);
CREATE INDEX audit_events_org_actor_idx ON audit_events (org_id, actor_id, seq);

-- What q searches (GET /orgs/{slug}/audit): summary, action, actor name and
-- location, lowercased; trigram-indexed so a rare term does not walk the
-- whole log.
CREATE FUNCTION ensign_audit_text(summary text, action text, actor_name text, location text)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT lower(summary || ' ' || action || ' ' || COALESCE(actor_name, '') || ' '
                       || COALESCE(location, '')) $$;
CREATE INDEX audit_events_search_idx ON audit_events
    USING gin (ensign_audit_text(summary, action, actor_name, location) gin_trgm_ops);
