-- 0003_accounts.sql - what the second API document (src/accounts/) needs
-- from the schema: keyset cursors bound by an HMAC, search indexes, internal
-- keys, the JSON forms of its records and one function per write.
--
-- Invariants kept here:
-- - a pagination cursor is base64url(JSON array of the last row's keys) "."
--   base64url(HMAC-SHA-256(route, scope, q, payload)) under a secret that is
--   generated once in this database (server_secrets) and never leaves it:
--   every worker and every node that shares the database agrees on it.
--   ensign_cursor_keys() rejects anything else with SQLSTATE 22EC1.
-- - search ("q") is a case-insensitive substring match on the human columns
--   of a resource, indexed with pg_trgm GIN indexes on the lower-cased text,
--   so a search over 100,000 members reads the index, not the members.
-- - the second document's timestamps are RFC 3339 in UTC with microseconds,
--   written by ensign_rfc3339() only.
-- - each write function (ensign_acc_*) is one statement for its caller and
--   answers the house shape (status, body, message) of src/mgmt/mgmt.h; the
--   notifications an event makes are written in the same transaction.
-- - an organization always keeps an owner; a project collaborator is always
--   a member of the project's organization (leaving or removal drops them).

CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- ---------------------------------------------------------------------------
-- Secrets and cursors

CREATE TABLE server_secrets (
    name   text PRIMARY KEY,
    secret bytea NOT NULL CHECK (octet_length(secret) >= 32)
);
INSERT INTO server_secrets (name, secret) VALUES ('cursor', gen_random_bytes(32));

CREATE FUNCTION ensign_b64url(b bytea) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT rtrim(translate(encode(b, 'base64'), E'+/\n', '-_'), '=') $$;

CREATE FUNCTION ensign_b64url_decode(t text) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT decode(rpad(translate(t, '-_', '+/'), (length(t) + 3) / 4 * 4, '='), 'base64') $$;

CREATE FUNCTION ensign_cursor_mac(route text, scope text, q text, payload text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT ensign_b64url(hmac(convert_to(route || chr(10) || scope || chr(10)
                                               || COALESCE(q, '') || chr(10) || payload, 'UTF8'),
                                    (SELECT s.secret FROM server_secrets s WHERE s.name = 'cursor'),
                                    'sha256')) $$;

-- The cursor that continues after a row whose keys are keys.
CREATE FUNCTION ensign_cursor_make(route text, scope text, q text, keys text[]) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT ensign_b64url(convert_to(p, 'UTF8')) || '.' || ensign_cursor_mac(route, scope, q, p)
            FROM (SELECT array_to_json(keys)::text AS p) AS payload $$;

-- The keys a cursor carries, or defaults for the first page (cursor NULL or
-- ''). A malformed, tampered or foreign cursor raises SQLSTATE 22EC1.
CREATE FUNCTION ensign_cursor_keys(route text, scope text, q text, cursor text, defaults text[])
    RETURNS text[]
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    AS $$
DECLARE
    payload text;
    keys text[];
BEGIN
    IF cursor IS NULL OR cursor = '' THEN
        RETURN defaults;
    END IF;
    IF length(cursor) > 1100 OR cursor !~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$' THEN
        RAISE EXCEPTION 'malformed cursor' USING ERRCODE = '22EC1';
    END IF;
    BEGIN
        payload := convert_from(ensign_b64url_decode(split_part(cursor, '.', 1)), 'UTF8');
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION 'malformed cursor' USING ERRCODE = '22EC1';
    END;
    IF ensign_cursor_mac(route, scope, q, payload) <> split_part(cursor, '.', 2) THEN
        RAISE EXCEPTION 'cursor does not belong to this query' USING ERRCODE = '22EC1';
    END IF;
    SELECT array_agg(e.value ORDER BY e.ord) INTO keys
      FROM json_array_elements_text(payload::json) WITH ORDINALITY AS e(value, ord);
    IF cardinality(keys) IS DISTINCT FROM cardinality(defaults) THEN
        RAISE EXCEPTION 'cursor does not belong to this query' USING ERRCODE = '22EC1';
    END IF;
    RETURN keys;
END
$$;

-- ---------------------------------------------------------------------------
-- Search

-- The LIKE pattern of a search text: a case-insensitive substring.
CREATE FUNCTION ensign_search_pattern(q text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT '%' || replace(replace(replace(lower(q), '\', '\\'), '%', '\%'), '_', '\_') || '%' $$;

CREATE FUNCTION ensign_person_text(name text, email text, username text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT lower(name || ' ' || email || ' ' || COALESCE(username, '')) $$;

CREATE FUNCTION ensign_project_text(name text, slug text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT lower(name || ' ' || slug) $$;

CREATE INDEX users_search_idx ON users
    USING gin (ensign_person_text(name, email, username) gin_trgm_ops);
CREATE INDEX projects_search_idx ON projects
    USING gin (ensign_project_text(name, slug) gin_trgm_ops);
CREATE INDEX invitations_search_idx ON invitations USING gin (lower(email) gin_trgm_ops);

-- Keyset orders: (created_at, id) ascending within the list's scope.
CREATE INDEX org_members_page_idx ON org_members (org_id, created_at, user_id);
CREATE INDEX projects_page_idx ON projects (org_id, created_at, id);
CREATE INDEX project_members_page_idx ON project_members (project_id, created_at, user_id);
CREATE INDEX invitations_page_idx ON invitations (org_id, created_at, id);
CREATE INDEX access_tokens_page_idx ON access_tokens (user_id, created_at, id)
    WHERE kind = 'personal';

-- ---------------------------------------------------------------------------
-- Internal keys (decisions.md section 7a): stored as SHA-256 digests.

CREATE TABLE internal_keys (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    key_digest text NOT NULL CHECK (ensign_digest_ok(key_digest)),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz NULL,
    CONSTRAINT internal_keys_key_digest_key UNIQUE (key_digest)
);

CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- ---------------------------------------------------------------------------
-- JSON forms (account-org-project-agent-api.md section 2, decisions.md section 4)

CREATE FUNCTION ensign_rfc3339(t timestamptz) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

CREATE FUNCTION ensign_org_form(o orgs, role text) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', o.id, 'name', o.name, 'slug', o.slug, 'role', role,
                                    'enforce_two_factor', o.enforce_two_factor,
                                    'require_sso', o.require_sso,
                                    'created_at', ensign_rfc3339(o.created_at)) $$;

CREATE FUNCTION ensign_project_form(p projects) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', p.id, 'org_id', p.org_id, 'name', p.name, 'slug', p.slug,
                                    'description', p.description, 'readme', p.readme,
                                    'repository_url', p.repository_url,
                                    'created_by', p.created_by,
                                    'created_at', ensign_rfc3339(p.created_at),
                                    'updated_at', ensign_rfc3339(p.updated_at),
                                    'deleted_at', ensign_rfc3339(p.deleted_at)) $$;

CREATE FUNCTION ensign_member_form(u users, role text, since timestamptz) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('user_id', u.id, 'name', u.name, 'email', u.email,
                                    'username', u.username, 'role', role,
                                    'created_at', ensign_rfc3339(since)) $$;

CREATE FUNCTION ensign_user_form(u users) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', u.id, 'email', u.email, 'name', u.name,
                                    'username', u.username,
                                    'created_at', ensign_rfc3339(u.created_at)) $$;

CREATE FUNCTION ensign_token_form(t access_tokens) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', t.id, 'name', t.name, 'prefix', t.prefix,
                                    'scopes', t.scopes, 'full', t.full_access,
                                    'expires_at', ensign_rfc3339(t.expires_at),
                                    'last_used_at', ensign_rfc3339(t.last_used_at),
                                    'created_at', ensign_rfc3339(t.created_at)) $$;

CREATE FUNCTION ensign_notification_form(n notifications) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', n.id, 'kind', n.kind, 'title', n.title, 'body', n.body,
                                    'read_at', ensign_rfc3339(n.read_at),
                                    'created_at', ensign_rfc3339(n.created_at)) $$;

-- pending, accepted, revoked, or expired (a pending one past expires_at).
CREATE FUNCTION ensign_invitation_status(i invitations) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN i.status = 'pending' AND i.expires_at <= now() THEN 'expired'
                      ELSE i.status END $$;

CREATE FUNCTION ensign_inviter_form(inviter_id uuid) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN inviter_id IS NULL THEN NULL
                      ELSE (SELECT jsonb_build_object('id', u.id, 'name', u.name)
                              FROM users u WHERE u.id = inviter_id) END $$;

CREATE FUNCTION ensign_invitation_form(i invitations) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', i.id, 'email', i.email, 'role', i.role,
                                    'status', ensign_invitation_status(i),
                                    'inviter', ensign_inviter_form(i.inviter_id),
                                    'created_at', ensign_rfc3339(i.created_at),
                                    'expires_at', ensign_rfc3339(i.expires_at)) $$;

-- A user by login: email or username, case-insensitively; deleted users never.
CREATE FUNCTION ensign_user_by_login(login text) RETURNS users
    LANGUAGE sql STABLE
    AS $$ SELECT u.* FROM users u
           WHERE NOT u.deleted
             AND (lower(u.email) = lower(login) OR lower(u.username) = lower(login))
           ORDER BY lower(u.email) = lower(login) DESC LIMIT 1 $$;

CREATE FUNCTION ensign_notify(user_id uuid, org_id uuid, kind text, title text, body text)
    RETURNS void
    LANGUAGE sql
    AS $$ INSERT INTO notifications (user_id, org_id, kind, title, body)
          VALUES (user_id, org_id, kind, title, body) $$;

CREATE FUNCTION ensign_role_rank(role text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT array_position(ARRAY['viewer', 'member', 'admin', 'owner'], role) $$;

-- The house answer shape.
CREATE TYPE ensign_answer AS (status integer, body text, message text);

CREATE FUNCTION ensign_ok(body jsonb) RETURNS ensign_answer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (200, body::text, NULL)::ensign_answer $$;

CREATE FUNCTION ensign_fail(status integer, message text) RETURNS ensign_answer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (status, NULL, message)::ensign_answer $$;

-- A 422 naming one field.
CREATE FUNCTION ensign_invalid(field text, message text) RETURNS ensign_answer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (422, jsonb_build_object(field, jsonb_build_array(message))::text,
                  'validation failed')::ensign_answer $$;

CREATE FUNCTION ensign_ack() RETURNS ensign_answer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (200, '{"ok": true}', NULL)::ensign_answer $$;

-- The key pattern form of a name (decisions.md section 9): "" when nothing is left.
CREATE FUNCTION ensign_slugify(name text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT trim(BOTH '-' FROM left(trim(BOTH '-' FROM
                      regexp_replace(lower(name), '[^a-z0-9]+', '-', 'g')), 63)) $$;

-- ---------------------------------------------------------------------------
-- Organizations

CREATE FUNCTION ensign_acc_org_create(creator uuid, org_name text, wanted_slug text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    new_slug text := COALESCE(wanted_slug, ensign_slugify(org_name));
    o orgs;
BEGIN
    IF new_slug = '' THEN
        RETURN ensign_invalid('slug', 'cannot derive a slug from the name: give one');
    END IF;
    INSERT INTO orgs (name, slug) VALUES (org_name, new_slug)
        ON CONFLICT (slug) DO NOTHING RETURNING * INTO o;
    IF o.id IS NULL THEN
        RETURN ensign_fail(409, 'the slug ' || new_slug || ' is taken');
    END IF;
    INSERT INTO org_members (org_id, user_id, role) VALUES (o.id, creator, 'owner');
    RETURN ensign_ok(ensign_org_form(o, 'owner'));
END
$$;

CREATE FUNCTION ensign_acc_org_rename(org uuid, new_name text, caller_role text)
    RETURNS ensign_answer
    LANGUAGE sql
    AS $$ WITH o AS (UPDATE orgs SET name = new_name, updated_at = now() WHERE id = org RETURNING *)
          SELECT ensign_ok(ensign_org_form(o, caller_role)) FROM o $$;

-- Removes member from org with their project collaborations; refuses to
-- leave the organization without an owner (409).
CREATE FUNCTION ensign_acc_drop_member(org uuid, member uuid) RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    old_role text;
BEGIN
    -- Owner changes of one organization take turns, so two owners removing
    -- each other cannot both see "another owner is left".
    PERFORM 1 FROM orgs o WHERE o.id = org FOR NO KEY UPDATE;
    SELECT m.role INTO old_role FROM org_members m
     WHERE m.org_id = org AND m.user_id = member FOR UPDATE;
    IF old_role IS NULL THEN
        RETURN ensign_fail(404, 'not a member of this organization');
    END IF;
    IF old_role = 'owner' AND NOT EXISTS (SELECT 1 FROM org_members m
                                           WHERE m.org_id = org AND m.role = 'owner'
                                             AND m.user_id <> member) THEN
        RETURN ensign_fail(409, 'the organization would have no owner');
    END IF;
    DELETE FROM org_members m WHERE m.org_id = org AND m.user_id = member;
    DELETE FROM project_members pm USING projects p
     WHERE pm.project_id = p.id AND p.org_id = org AND pm.user_id = member;
    RETURN ensign_ack();
END
$$;

CREATE FUNCTION ensign_acc_org_leave(org uuid, caller uuid) RETURNS ensign_answer
    LANGUAGE sql
    AS $$ SELECT ensign_acc_drop_member(org, caller) $$;

-- ---------------------------------------------------------------------------
-- Members

CREATE FUNCTION ensign_acc_member_add(org uuid, caller_role text, login text, new_role text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    u users := ensign_user_by_login(login);
    o orgs;
BEGIN
    IF new_role = 'owner' AND caller_role <> 'owner' THEN
        RETURN ensign_fail(403, 'only an owner may make owners');
    END IF;
    IF u.id IS NULL THEN
        RETURN ensign_invalid('login', 'no user has this email or username');
    END IF;
    INSERT INTO org_members (org_id, user_id, role) VALUES (org, u.id, new_role)
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN ensign_fail(409, 'already a member of this organization');
    END IF;
    SELECT * INTO o FROM orgs WHERE id = org;
    PERFORM ensign_notify(u.id, org, 'org.member_added', 'Added to ' || o.name,
                          'You were added to the organization ' || o.name || ' as ' || new_role || '.');
    RETURN ensign_ack();
END
$$;

CREATE FUNCTION ensign_acc_member_remove(org uuid, caller_role text, member uuid)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    old_role text;
    answer ensign_answer;
    o orgs;
BEGIN
    SELECT m.role INTO old_role FROM org_members m WHERE m.org_id = org AND m.user_id = member;
    IF old_role = 'owner' AND caller_role <> 'owner' THEN
        RETURN ensign_fail(403, 'only an owner may remove an owner');
    END IF;
    answer := ensign_acc_drop_member(org, member);
    IF answer.status = 200 THEN
        SELECT * INTO o FROM orgs WHERE id = org;
        PERFORM ensign_notify(member, org, 'org.member_removed', 'Removed from ' || o.name,
                              'You were removed from the organization ' || o.name || '.');
    END IF;
    RETURN answer;
END
$$;

CREATE FUNCTION ensign_acc_member_role(org uuid, caller_role text, member uuid, new_role text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    old_role text;
    o orgs;
BEGIN
    PERFORM 1 FROM orgs x WHERE x.id = org FOR NO KEY UPDATE; -- see ensign_acc_drop_member
    SELECT m.role INTO old_role FROM org_members m
     WHERE m.org_id = org AND m.user_id = member FOR UPDATE;
    IF old_role IS NULL THEN
        RETURN ensign_fail(404, 'not a member of this organization');
    END IF;
    IF (old_role = 'owner' OR new_role = 'owner') AND caller_role <> 'owner' THEN
        RETURN ensign_fail(403, 'only an owner may make or unmake owners');
    END IF;
    IF old_role = new_role THEN
        RETURN ensign_ack();
    END IF;
    IF old_role = 'owner' AND NOT EXISTS (SELECT 1 FROM org_members m
                                           WHERE m.org_id = org AND m.role = 'owner'
                                             AND m.user_id <> member) THEN
        RETURN ensign_fail(409, 'the organization would have no owner');
    END IF;
    UPDATE org_members m SET role = new_role WHERE m.org_id = org AND m.user_id = member;
    SELECT * INTO o FROM orgs WHERE id = org;
    PERFORM ensign_notify(member, org, 'org.role_changed', 'Your role in ' || o.name || ' changed',
                          'Your role in the organization ' || o.name || ' is now ' || new_role
                          || ' (was ' || old_role || ').');
    RETURN ensign_ack();
END
$$;

-- ---------------------------------------------------------------------------
-- Invitations (pending for 7 days)

CREATE FUNCTION ensign_acc_invite(org uuid, inviter uuid, login text, new_role text,
                                  digest text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    u users := ensign_user_by_login(login);
    o orgs;
    i invitations;
BEGIN
    SELECT * INTO o FROM orgs WHERE id = org;
    IF u.id IS NOT NULL THEN
        INSERT INTO org_members (org_id, user_id, role) VALUES (org, u.id, new_role)
            ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            RETURN ensign_fail(409, 'already a member of this organization');
        END IF;
        PERFORM ensign_notify(u.id, org, 'org.member_added', 'Added to ' || o.name,
                              'You were added to the organization ' || o.name || ' as '
                              || new_role || '.');
        RETURN ensign_ok(jsonb_build_object('status', 'added', 'user_id', u.id,
                                            'email', u.email, 'org_name', o.name));
    END IF;
    IF position('@' IN login) < 2 THEN
        RETURN ensign_invalid('login', 'no user has this username; invite an email address');
    END IF;
    IF EXISTS (SELECT 1 FROM invitations x
                WHERE x.org_id = org AND lower(x.email) = lower(login)
                  AND x.status = 'pending' AND x.expires_at > now()) THEN
        RETURN ensign_fail(409, 'a pending invitation for this email exists');
    END IF;
    INSERT INTO invitations (org_id, email, role, token_digest, inviter_id, expires_at)
    VALUES (org, login, new_role, digest, inviter, now() + interval '7 days')
    RETURNING * INTO i;
    RETURN ensign_ok(jsonb_build_object('status', 'invited', 'email', i.email,
                                        'org_name', o.name,
                                        'invitation', ensign_invitation_form(i)));
END
$$;

CREATE FUNCTION ensign_acc_invitation_revoke(org uuid, invitation uuid) RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    i invitations;
BEGIN
    SELECT * INTO i FROM invitations x WHERE x.org_id = org AND x.id = invitation FOR UPDATE;
    IF i.id IS NULL THEN
        RETURN ensign_fail(404, 'no such invitation');
    END IF;
    IF i.status = 'accepted' THEN
        RETURN ensign_fail(409, 'the invitation was accepted already');
    END IF;
    UPDATE invitations x SET status = 'revoked', revoked_at = COALESCE(x.revoked_at, now())
     WHERE x.id = i.id;
    RETURN ensign_ack();
END
$$;

CREATE FUNCTION ensign_acc_invitation_lookup(digest text) RETURNS ensign_answer
    LANGUAGE sql STABLE
    AS $$ SELECT ensign_ok(jsonb_build_object(
                     'id', i.id, 'email', i.email,
                     'expired', i.status = 'pending' AND i.expires_at <= now(),
                     'inviter', ensign_inviter_form(i.inviter_id), 'org_name', o.name,
                     'org_slug', o.slug, 'role', i.role, 'status', ensign_invitation_status(i)))
            FROM invitations i JOIN orgs o ON o.id = i.org_id
           WHERE i.token_digest = digest $$;

-- The caller accepts: their email must be the invitation's (else 403); a
-- used, revoked or expired invitation is 404.
CREATE FUNCTION ensign_acc_invitation_accept(digest text, caller uuid) RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    i invitations;
    o orgs;
    u users;
BEGIN
    SELECT * INTO i FROM invitations x WHERE x.token_digest = digest FOR UPDATE;
    IF i.id IS NULL OR i.status <> 'pending' OR i.expires_at <= now() THEN
        RETURN ensign_fail(404, 'no such pending invitation');
    END IF;
    SELECT * INTO u FROM users WHERE id = caller;
    IF lower(u.email) <> lower(i.email) THEN
        RETURN ensign_fail(403, 'the invitation was sent to another email address');
    END IF;
    SELECT * INTO o FROM orgs WHERE id = i.org_id;
    UPDATE invitations x SET status = 'accepted', accepted_at = now(), accepted_by = caller
     WHERE x.id = i.id;
    INSERT INTO org_members (org_id, user_id, role) VALUES (i.org_id, caller, i.role)
        ON CONFLICT DO NOTHING;
    IF FOUND THEN
        PERFORM ensign_notify(caller, o.id, 'org.member_added', 'Joined ' || o.name,
                              'You joined the organization ' || o.name || ' as ' || i.role || '.');
        IF i.inviter_id IS NOT NULL THEN
            PERFORM ensign_notify(i.inviter_id, o.id, 'org.invitation_accepted',
                                  u.name || ' joined ' || o.name,
                                  u.name || ' accepted your invitation to ' || o.name || '.');
        END IF;
    END IF;
    RETURN ensign_ok(jsonb_build_object('org_name', o.name, 'org_slug', o.slug));
END
$$;

-- ---------------------------------------------------------------------------
-- Projects ({project} is the slug or the id)

CREATE FUNCTION ensign_project_find(org uuid, ref text, deleted boolean) RETURNS projects
    LANGUAGE sql STABLE
    AS $$ SELECT p.* FROM projects p
           WHERE p.org_id = org AND (p.deleted_at IS NOT NULL) = deleted
             AND (p.slug = ref
                  OR (ref ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                      AND p.id = ref::uuid)) $$;

CREATE FUNCTION ensign_project_answer(p projects, org_form jsonb) RETURNS ensign_answer
    LANGUAGE sql STABLE
    AS $$ SELECT CASE WHEN p.id IS NULL THEN ensign_fail(404, 'no such project')
                      WHEN org_form IS NULL THEN ensign_ok(ensign_project_form(p))
                      ELSE ensign_ok(ensign_project_form(p)
                                     || jsonb_build_object('organization', org_form)) END $$;

CREATE FUNCTION ensign_acc_project_create(org uuid, creator uuid, p_name text, wanted_slug text,
                                          p_description text, p_readme text, p_repository text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    new_slug text := COALESCE(wanted_slug, ensign_slugify(p_name));
    p projects;
BEGIN
    IF new_slug = '' THEN
        RETURN ensign_invalid('slug', 'cannot derive a slug from the name: give one');
    END IF;
    INSERT INTO projects (org_id, name, slug, description, readme, repository_url, created_by)
    VALUES (org, p_name, new_slug, COALESCE(p_description, ''), COALESCE(p_readme, ''),
            COALESCE(p_repository, ''), creator)
    ON CONFLICT (org_id, slug) DO NOTHING RETURNING * INTO p;
    IF p.id IS NULL THEN
        RETURN ensign_fail(409, 'the project slug ' || new_slug || ' is taken');
    END IF;
    IF creator IS NOT NULL THEN
        INSERT INTO project_members (project_id, user_id, role) VALUES (p.id, creator, 'admin');
    END IF;
    RETURN ensign_ok(ensign_project_form(p));
END
$$;

CREATE FUNCTION ensign_acc_project_update(org uuid, ref text, p_name text, new_slug text,
                                          p_description text, p_readme text, p_repository text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    p projects := ensign_project_find(org, ref, false);
BEGIN
    IF p.id IS NULL THEN
        RETURN ensign_fail(404, 'no such project');
    END IF;
    IF new_slug IS NOT NULL AND new_slug <> p.slug
       AND EXISTS (SELECT 1 FROM projects x WHERE x.org_id = org AND x.slug = new_slug) THEN
        RETURN ensign_fail(409, 'the project slug ' || new_slug || ' is taken');
    END IF;
    UPDATE projects x SET name = COALESCE(p_name, x.name), slug = COALESCE(new_slug, x.slug),
           description = COALESCE(p_description, x.description),
           readme = COALESCE(p_readme, x.readme),
           repository_url = COALESCE(p_repository, x.repository_url), updated_at = now()
     WHERE x.id = p.id RETURNING * INTO p;
    RETURN ensign_ok(ensign_project_form(p));
END
$$;

CREATE FUNCTION ensign_acc_project_delete(org uuid, ref text, org_form jsonb)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    p projects := ensign_project_find(org, ref, false);
BEGIN
    IF p.id IS NOT NULL THEN
        UPDATE projects x SET deleted_at = now(), updated_at = now() WHERE x.id = p.id
            RETURNING * INTO p;
    END IF;
    RETURN ensign_project_answer(p, org_form);
END
$$;

-- Restoring an active project is a no-op 200.
CREATE FUNCTION ensign_acc_project_restore(org uuid, ref text) RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    p projects := ensign_project_find(org, ref, true);
BEGIN
    IF p.id IS NOT NULL THEN
        UPDATE projects x SET deleted_at = NULL, updated_at = now() WHERE x.id = p.id
            RETURNING * INTO p;
    ELSE
        p := ensign_project_find(org, ref, false);
    END IF;
    RETURN ensign_project_answer(p, NULL);
END
$$;

-- ---------------------------------------------------------------------------
-- Project collaborators

CREATE FUNCTION ensign_acc_collaborator_add(org uuid, ref text, login text, new_role text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    p projects := ensign_project_find(org, ref, false);
    u users := ensign_user_by_login(login);
BEGIN
    IF p.id IS NULL THEN
        RETURN ensign_fail(404, 'no such project');
    END IF;
    IF u.id IS NULL OR NOT EXISTS (SELECT 1 FROM org_members m
                                    WHERE m.org_id = org AND m.user_id = u.id) THEN
        RETURN ensign_invalid('login', 'not a member of the organization');
    END IF;
    INSERT INTO project_members (project_id, user_id, role) VALUES (p.id, u.id, new_role)
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN ensign_fail(409, 'already a collaborator of this project');
    END IF;
    PERFORM ensign_notify(u.id, org, 'project.collaborator_added', 'Added to ' || p.name,
                          'You were added to the project ' || p.name || ' as ' || new_role || '.');
    RETURN ensign_ack();
END
$$;

CREATE FUNCTION ensign_acc_collaborator_remove(org uuid, ref text, member uuid)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    p projects := ensign_project_find(org, ref, false);
BEGIN
    IF p.id IS NULL THEN
        RETURN ensign_fail(404, 'no such project');
    END IF;
    DELETE FROM project_members pm WHERE pm.project_id = p.id AND pm.user_id = member;
    IF NOT FOUND THEN
        RETURN ensign_fail(404, 'not a collaborator of this project');
    END IF;
    RETURN ensign_ack();
END
$$;

CREATE FUNCTION ensign_acc_collaborator_role(org uuid, ref text, member uuid, new_role text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    p projects := ensign_project_find(org, ref, false);
BEGIN
    IF p.id IS NULL THEN
        RETURN ensign_fail(404, 'no such project');
    END IF;
    UPDATE project_members pm SET role = new_role WHERE pm.project_id = p.id AND pm.user_id = member;
    IF NOT FOUND THEN
        RETURN ensign_fail(404, 'not a collaborator of this project');
    END IF;
    RETURN ensign_ack();
END
$$;

-- ---------------------------------------------------------------------------
-- Internal operations

CREATE FUNCTION ensign_acc_provision_member(caller uuid, org_ref text, new_role text)
    RETURNS ensign_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    o orgs;
BEGIN
    SELECT * INTO o FROM orgs x
     WHERE x.slug = org_ref
        OR (org_ref ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
            AND x.id = org_ref::uuid);
    IF o.id IS NULL THEN
        RETURN ensign_fail(404, 'no such organization');
    END IF;
    INSERT INTO org_members (org_id, user_id, role) VALUES (o.id, caller, new_role)
        ON CONFLICT DO NOTHING;
    IF FOUND THEN
        PERFORM ensign_notify(caller, o.id, 'org.member_added', 'Added to ' || o.name,
                              'You were added to the organization ' || o.name || ' as '
                              || new_role || ' by single sign-on.');
    END IF;
    RETURN ensign_ack();
END
$$;
