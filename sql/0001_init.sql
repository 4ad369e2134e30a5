-- 0001_init.sql - the first Ensign schema: accounts, organizations, projects,
-- flags and everything evaluation reads, usage counters and the waitlist.
--
-- Applied once by `ensignctl migrate` (src/migrate.c) inside one transaction
-- and recorded in schema_migrations; never edit it after release: add a new
-- numbered file instead.
--
-- Invariants kept here rather than in C:
-- - ids are uuid from gen_random_uuid(); times are timestamptz.
-- - keys of flags, segments, entities, environments and slugs of
--   organizations and projects match ^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$ and are
--   1 to 63 characters; enums and the lengths the API documents fix are
--   CHECK constraints.
-- - secrets are stored only as lowercase hex SHA-256 digests (tokens, SDK
--   keys, invitation tokens, session cookies) or scrypt MCF strings
--   (passwords).
-- - emails and usernames are unique case-insensitively.
-- - every committed change to a table that feeds evaluation moves
--   config_generation.generation by exactly one per transaction and sends
--   NOTIFY ensign_config with the new generation (see the end of the file).
-- - every organization has the three default environments from the moment
--   it exists.

-- ---------------------------------------------------------------------------
-- Shared checks

CREATE FUNCTION ensign_key_ok(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT char_length(value) BETWEEN 1 AND 63
                 AND value ~ '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$' $$;

CREATE FUNCTION ensign_digest_ok(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT value ~ '^[0-9a-f]{64}$' $$;

-- An array of at most max_items strings, each min_len to max_len characters.
CREATE FUNCTION ensign_text_items_ok(items text[], max_items integer,
                                     min_len integer, max_len integer)
    RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT cardinality(items) <= max_items
                 AND NOT EXISTS (SELECT 1 FROM unnest(items) AS item
                                 WHERE item IS NULL
                                    OR char_length(item) NOT BETWEEN min_len AND max_len) $$;

-- A JSON array of at most max_items items.
CREATE FUNCTION ensign_json_array_ok(value jsonb, max_items integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT jsonb_typeof(value) = 'array' AND jsonb_array_length(value) <= max_items $$;

-- ---------------------------------------------------------------------------
-- Accounts

CREATE TABLE users (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email         text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 320
                                       AND position('@' IN email) > 1),
    name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    -- GitHub-style handle: letters, digits and inner hyphens, at most 39.
    username      text NULL CHECK (char_length(username) BETWEEN 1 AND 39
                                   AND username ~ '^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$'),
    -- scrypt in libscrypt's MCF form ("$s1$..."); NULL: no password login.
    password_hash text NULL CHECK (password_hash LIKE '$s1$%'),
    avatar_url    text NULL,
    bio           text NULL,
    company       text NULL,
    location      text NULL,
    pronouns      text NULL,
    public_email  text NULL,
    website_url   text NULL,
    social_links  jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(social_links) = 'object'),
    deleted       boolean NOT NULL DEFAULT false,
    deleted_at    timestamptz NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE UNIQUE INDEX users_username_key ON users (lower(username));

-- Browser sessions: the cookie value is a random token, stored as its digest.
CREATE TABLE sessions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    cookie_digest text NOT NULL UNIQUE CHECK (ensign_digest_ok(cookie_digest)),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

-- ---------------------------------------------------------------------------
-- Organizations

CREATE TABLE orgs (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name               text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    slug               text NOT NULL CHECK (ensign_key_ok(slug)),
    plan               text NOT NULL DEFAULT 'free' CHECK (char_length(plan) BETWEEN 1 AND 63),
    enforce_two_factor boolean NOT NULL DEFAULT false,
    require_sso        boolean NOT NULL DEFAULT false,
    ip_disclosure      boolean NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT orgs_slug_key UNIQUE (slug)
);

CREATE TABLE org_members (
    org_id     uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL DEFAULT 'member'
               CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX org_members_user_idx ON org_members (user_id);

-- Personal tokens belong to a user, organization tokens to an organization.
-- scopes: {"flags": "read"|"write", "orgs": ..., ...}; full_access: every scope.
CREATE TABLE access_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind         text NOT NULL CHECK (kind IN ('personal', 'organization')),
    user_id      uuid NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id       uuid NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    token_digest text NOT NULL CHECK (ensign_digest_ok(token_digest)),
    prefix       text NOT NULL,
    last_four    text NOT NULL CHECK (char_length(last_four) = 4),
    scopes       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(scopes) = 'object'),
    full_access  boolean NOT NULL DEFAULT false,
    expires_at   timestamptz NULL,
    last_used_at timestamptz NULL,
    revoked_at   timestamptz NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT access_tokens_token_digest_key UNIQUE (token_digest),
    CONSTRAINT access_tokens_owner_check
        CHECK ((kind = 'personal' AND user_id IS NOT NULL)
               OR (kind = 'organization' AND org_id IS NOT NULL))
);
CREATE INDEX access_tokens_user_idx ON access_tokens (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX access_tokens_org_idx ON access_tokens (org_id) WHERE org_id IS NOT NULL;

CREATE TABLE notifications (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id     uuid NULL REFERENCES orgs (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (char_length(kind) BETWEEN 1 AND 63),
    title      text NOT NULL,
    body       text NULL,
    read_at    timestamptz NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_user_idx ON notifications (user_id, created_at DESC, id DESC);
CREATE INDEX notifications_unread_idx ON notifications (user_id) WHERE read_at IS NULL;

-- status: pending until accepted or revoked; "expired" is derived from
-- expires_at. The token is single-use and stored as its digest.
CREATE TABLE invitations (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id       uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    email        text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 320),
    role         text NOT NULL DEFAULT 'member' CHECK (role IN ('admin', 'member', 'viewer')),
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'accepted', 'revoked')),
    token_digest text NOT NULL CHECK (ensign_digest_ok(token_digest)),
    inviter_id   uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    expires_at   timestamptz NOT NULL,
    accepted_at  timestamptz NULL,
    accepted_by  uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    revoked_at   timestamptz NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT invitations_token_digest_key UNIQUE (token_digest)
);
CREATE INDEX invitations_org_idx ON invitations (org_id, created_at DESC, id DESC);
CREATE INDEX invitations_email_idx ON invitations (org_id, lower(email));

-- actor_name keeps the name at the time of the event (the actor may be an
-- organization token or a deleted user).
CREATE TABLE audit_events (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    actor_id   uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    actor_name text NULL,
    action     text NOT NULL CHECK (char_length(action) BETWEEN 1 AND 100),
    summary    text NOT NULL,
    ip         inet NULL,
    location   text NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_org_idx ON audit_events (org_id, created_at DESC, id DESC);

-- ---------------------------------------------------------------------------
-- Projects

CREATE TABLE projects (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name           text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    slug           text NOT NULL CHECK (ensign_key_ok(slug)),
    description    text NOT NULL DEFAULT '',
    readme         text NOT NULL DEFAULT '',
    repository_url text NOT NULL DEFAULT '',
    created_by     uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    deleted_at     timestamptz NULL,
    -- Soft-deleted projects keep their slug so that they can be restored.
    CONSTRAINT projects_org_slug_key UNIQUE (org_id, slug)
);

CREATE TABLE project_members (
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('read', 'triage', 'write', 'maintain', 'admin')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user_idx ON project_members (user_id);

-- ---------------------------------------------------------------------------
-- Flags and what evaluation reads

CREATE TABLE environments (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key        text NOT NULL CHECK (ensign_key_ok(key)),
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    sort_order integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT environments_org_key_key UNIQUE (org_id, key)
);

-- Deleted flags are removed with everything that hangs off them.
-- variant_seq counts the variants the flag has ever had (for variant-N keys).
CREATE TABLE flags (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id             uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key                text NOT NULL CHECK (ensign_key_ok(key)),
    name               text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description        text NULL CHECK (char_length(description) <= 2000),
    type               text NOT NULL DEFAULT 'boolean'
                       CHECK (type IN ('boolean', 'string', 'number', 'json')),
    permanent          boolean NOT NULL DEFAULT false,
    tags               text[] NOT NULL DEFAULT '{}' CHECK (ensign_text_items_ok(tags, 50, 1, 50)),
    maintainer_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    created_by_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    variant_seq        integer NOT NULL DEFAULT 0 CHECK (variant_seq >= 0),
    archived_at        timestamptz NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT flags_org_key_key UNIQUE (org_id, key)
);

-- No flag ever serves null.
CREATE TABLE variants (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    flag_id    uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
    key        text NOT NULL CHECK (ensign_key_ok(key)),
    value      jsonb NOT NULL CHECK (jsonb_typeof(value) <> 'null'),
    label      text NULL CHECK (char_length(label) <= 120),
    sort_order integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT variants_flag_key_key UNIQUE (flag_id, key)
);

-- One row per (flag, environment). default_serve is a serve object:
-- {"variant": KEY} or {"rollout": [{"variant": KEY, "weight": N}, ...], "bucketBy"?: ATTR}.
CREATE TABLE flag_environments (
    flag_id         uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
    environment_id  uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    enabled         boolean NOT NULL DEFAULT false,
    default_serve   jsonb NOT NULL CHECK (jsonb_typeof(default_serve) = 'object'),
    off_variant_key text NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flag_id, environment_id)
);
CREATE INDEX flag_environments_environment_idx ON flag_environments (environment_id);

-- Evaluated in (priority, created_at) order, lowest first.
CREATE TABLE rules (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    flag_id        uuid NOT NULL,
    environment_id uuid NOT NULL,
    priority       bigint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9007199254740991),
    description    text NULL CHECK (char_length(description) <= 500),
    conditions     jsonb NOT NULL DEFAULT '[]' CHECK (ensign_json_array_ok(conditions, 50)),
    serve          jsonb NOT NULL CHECK (jsonb_typeof(serve) = 'object'),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (flag_id, environment_id)
        REFERENCES flag_environments (flag_id, environment_id) ON DELETE CASCADE
);
CREATE INDEX rules_order_idx ON rules (flag_id, environment_id, priority, created_at);

CREATE TABLE revisions (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    flag_id        uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
    environment_id uuid NULL REFERENCES environments (id) ON DELETE SET NULL,
    action         text NOT NULL CHECK (char_length(action) BETWEEN 1 AND 100),
    summary        text NULL,
    changes        text[] NOT NULL DEFAULT '{}',
    user_id        uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    user_name      text NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX revisions_flag_idx ON revisions (flag_id, created_at DESC, id DESC);

CREATE TABLE segments (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id      uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key         text NOT NULL CHECK (ensign_key_ok(key)),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description text NULL CHECK (char_length(description) <= 2000),
    conditions  jsonb NOT NULL DEFAULT '[]' CHECK (ensign_json_array_ok(conditions, 50)),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT segments_org_key_key UNIQUE (org_id, key)
);

CREATE TABLE entities (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key        text NOT NULL CHECK (ensign_key_ok(key)),
    label      text NOT NULL CHECK (char_length(label) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entities_org_key_key UNIQUE (org_id, key)
);

CREATE TABLE entity_attributes (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    entity_id  uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    key        text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 120),
    data_type  text NOT NULL DEFAULT 'string' CHECK (data_type IN ('string', 'number', 'boolean')),
    labels     text[] NULL CHECK (ensign_text_items_ok(labels, 200, 0, 120)),
    sort_order integer NOT NULL DEFAULT 0,
    CONSTRAINT entity_attributes_entity_key_key UNIQUE (entity_id, key)
);

-- environment_id is NULL only if the environment was removed (the API reports
-- environmentKey null); such a key evaluates nothing.
CREATE TABLE sdk_keys (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id             uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    environment_id     uuid NULL REFERENCES environments (id) ON DELETE SET NULL,
    name               text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 120),
    token_digest       text NOT NULL CHECK (ensign_digest_ok(token_digest)),
    prefix             text NOT NULL,
    last_four          text NOT NULL CHECK (char_length(last_four) = 4),
    created_by_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    last_used_at       timestamptz NULL,
    revoked_at         timestamptz NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sdk_keys_token_digest_key UNIQUE (token_digest)
);
CREATE INDEX sdk_keys_org_idx ON sdk_keys (org_id, created_at);

-- Evaluation counts per flag, environment, served variant and hour, added to
-- by the flusher with INSERT ... ON CONFLICT DO UPDATE SET count = count + n.
CREATE TABLE usage_counters (
    flag_id        uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
    environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    variant_key    text NOT NULL,
    hour           timestamptz NOT NULL,
    count          bigint NOT NULL DEFAULT 0 CHECK (count >= 0),
    last_seen_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flag_id, environment_id, variant_key, hour)
);
CREATE INDEX usage_counters_environment_idx ON usage_counters (environment_id);

CREATE TABLE waitlist (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email      text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 320),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX waitlist_email_key ON waitlist (lower(email));

-- ---------------------------------------------------------------------------
-- Default environments: Production, Preview and Development exist for every
-- organization from its creation on (ON CONFLICT keeps lazy creators working).

CREATE FUNCTION ensign_create_default_environments() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO environments (org_id, key, name, sort_order)
    VALUES (NEW.id, 'production', 'Production', 0),
           (NEW.id, 'preview', 'Preview', 1),
           (NEW.id, 'development', 'Development', 2)
    ON CONFLICT (org_id, key) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER orgs_default_environments
    AFTER INSERT ON orgs
    FOR EACH ROW EXECUTE FUNCTION ensign_create_default_environments();

-- ---------------------------------------------------------------------------
-- Configuration generation: the refresher rebuilds the snapshot when it moves.
--
-- The bump runs in deferred constraint triggers, so it happens once per
-- transaction, at COMMIT, after every other statement: the row lock on
-- config_generation is taken last and held only while committing. (Taking it
-- at the end of each statement would hold it across later statements of the
-- same transaction and invite lock-order deadlocks between writers.) The
-- transaction-local setting ensign.config_bumped makes later rows of the same
-- transaction skip the update. NOTIFY is delivered at commit, with the new
-- generation as payload.

CREATE TABLE config_generation (
    id         integer PRIMARY KEY CHECK (id = 1),
    generation bigint NOT NULL
);
INSERT INTO config_generation (id, generation) VALUES (1, 1);

CREATE FUNCTION ensign_bump_config_generation() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    new_generation bigint;
BEGIN
    IF coalesce(current_setting('ensign.config_bumped', true), '') = 'on' THEN
        RETURN NULL;
    END IF;
    UPDATE config_generation SET generation = generation + 1 WHERE id = 1
        RETURNING generation INTO new_generation;
    PERFORM set_config('ensign.config_bumped', 'on', true);
    PERFORM pg_notify('ensign_config', new_generation::text);
    RETURN NULL;
END
$$;

DO $$
DECLARE
    feeding_table regclass;
BEGIN
    FOREACH feeding_table IN ARRAY ARRAY['flags', 'variants', 'flag_environments', 'rules',
                                         'segments', 'entities', 'entity_attributes',
                                         'environments']::regclass[] LOOP
        EXECUTE format('CREATE CONSTRAINT TRIGGER config_generation_bump
                            AFTER INSERT OR UPDATE OR DELETE ON %s
                            DEFERRABLE INITIALLY DEFERRED
                            FOR EACH ROW EXECUTE FUNCTION ensign_bump_config_generation()',
                       feeding_table);
        EXECUTE format('CREATE TRIGGER config_generation_truncate
                            AFTER TRUNCATE ON %s
                            FOR EACH STATEMENT EXECUTE FUNCTION ensign_bump_config_generation()',
                       feeding_table);
    END LOOP;
END
$$;

-- SDK keys: only changes that alter what a key may evaluate count, so the
-- recording of last_used_at does not rebuild the snapshot.
CREATE CONSTRAINT TRIGGER config_generation_bump
    AFTER INSERT OR DELETE ON sdk_keys
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ensign_bump_config_generation();
CREATE CONSTRAINT TRIGGER config_generation_bump_update
    AFTER UPDATE OF org_id, environment_id, token_digest, revoked_at ON sdk_keys
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id
          OR OLD.environment_id IS DISTINCT FROM NEW.environment_id
          OR OLD.token_digest IS DISTINCT FROM NEW.token_digest
          OR OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
    EXECUTE FUNCTION ensign_bump_config_generation();
CREATE TRIGGER config_generation_truncate
    AFTER TRUNCATE ON sdk_keys
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_bump_config_generation();
