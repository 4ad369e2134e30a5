-- 0017_webhooks.sql - webhooks and their outbox (src/api/webhooks.c,
-- src/api/webhook_deliveries.c, src/daemon/deliverer.c; doc/choices.md
-- "Webhooks").
--
-- webhooks: an organization's endpoints. events holds audit action
-- patterns ("flag.*", "segment.created", "*"); secret is the HMAC-SHA256
-- signing key, kept because the deliverer signs with it (never answered
-- again after creation). consecutive_failures counts failed attempts since
-- the last success: at 100 the webhook is deactivated and the
-- organization's admins and owners are notified.
--
-- webhook_deliveries: the outbox. A row is written by a trigger on the
-- audit log insert, so in the transaction of the change itself: a change
-- that commits has its deliveries, one that rolls back has none. body is
-- the exact JSON text sent (and signed). status pending -> delivered, or
-- failed once a retry would fall past window_start + 24 hours. A pending
-- row is due when next_attempt_at has passed and no live lease holds it:
-- the deliverer claims due rows (FOR UPDATE SKIP LOCKED) by setting
-- claimed_until (a lease) and a fresh claim_id, commits, then sends; it
-- records the outcome only under its own claim_id, so a deliverer whose
-- lease expired (a crash, a stall) cannot overwrite a newer claim.
--
-- webhook_flag_states: the last state of each flag of an organization
-- that has webhooks, so an event's before/after can be told from the
-- tables: after is computed when the event is inserted, before is the
-- state kept from the flag's previous event. Kept only while the
-- organization has a webhook (seeded when its first is created, dropped
-- with its last).

CREATE TABLE webhooks (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id               uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    url                  text NOT NULL CHECK (char_length(url) BETWEEN 8 AND 2048),
    events               text[] NOT NULL CHECK (ensign_text_items_ok(events, 20, 1, 100)
                                                AND cardinality(events) >= 1),
    description          text NULL CHECK (char_length(description) <= 500),
    secret               text NOT NULL,
    active               boolean NOT NULL DEFAULT true,
    consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    deactivated_at       timestamptz NULL,
    created_by_user_id   uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_org_idx ON webhooks (org_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    webhook_id      uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL,
    action          text NOT NULL,
    body            text NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NULL DEFAULT now(),
    claimed_until   timestamptz NULL,
    claim_id        uuid NULL,
    response_code   integer NULL,
    duration_ms     integer NULL,
    last_error      text NULL,
    window_start    timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_hook_idx
    ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

CREATE TABLE webhook_flag_states (
    org_id   uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    flag_key text NOT NULL,
    state    jsonb NOT NULL,
    PRIMARY KEY (org_id, flag_key)
);

-- Does an audit action match a pattern ("*", "flag.*", "flag.created")?
CREATE FUNCTION ensign_webhook_matches(pattern text, action text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT pattern = '*' OR pattern = action
                 OR (right(pattern, 2) = '.*'
                     AND left(action, length(pattern) - 1) = left(pattern, length(pattern) - 1)) $$;

-- A flag's whole state: its form, its variants, and its configuration in
-- every environment (by environment key); NULL when there is no such flag.
CREATE FUNCTION ensign_webhook_flag_state(org uuid, flag_key text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT ensign_flag_json(f) || jsonb_build_object(
               'variants', COALESCE((SELECT jsonb_agg(ensign_variant_json(v)
                                                      ORDER BY v.sort_order, v.key)
                                       FROM variants v WHERE v.flag_id = f.id), '[]'),
               'environments', COALESCE((SELECT jsonb_object_agg(e.key,
                                                                 ensign_flag_environment_json(fe, e))
                                           FROM flag_environments fe
                                           JOIN environments e ON e.id = fe.environment_id
                                          WHERE fe.flag_id = f.id), '{}'))
      FROM flags f WHERE f.org_id = org AND f.key = flag_key $$;

-- The webhook's form (never the secret).
CREATE FUNCTION ensign_webhook_form(w webhooks) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', w.id, 'url', w.url, 'events', to_jsonb(w.events),
                                    'description', w.description, 'active', w.active,
                                    'consecutiveFailures', w.consecutive_failures,
                                    'deactivatedAt', ensign_iso(w.deactivated_at),
                                    'createdAt', ensign_iso(w.created_at),
                                    'updatedAt', ensign_iso(w.updated_at)) $$;

CREATE FUNCTION ensign_webhook_delivery_form(d webhook_deliveries) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', d.id, 'eventId', d.event_id, 'action', d.action,
                                    'status', d.status, 'responseCode', d.response_code,
                                    'durationMs', d.duration_ms, 'attempts', d.attempts,
                                    'nextAttemptAt',
                                    CASE WHEN d.status = 'pending'
                                         THEN ensign_iso(greatest(d.next_attempt_at,
                                                                  d.claimed_until)) END,
                                    'lastError', d.last_error,
                                    'createdAt', ensign_iso(d.created_at),
                                    'deliveredAt', ensign_iso(d.delivered_at)) $$;

-- The outbox writer: one delivery per active webhook of the event's
-- organization with a matching pattern, in the inserting transaction.
-- An AFTER trigger: it runs at the end of the inserting statement, so the
-- flag's state it reads is the state the statement left.
CREATE FUNCTION ensign_webhook_enqueue() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    key text;
    before_state jsonb := NULL;
    after_state jsonb := NULL;
    org_slug text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = NEW.org_id) THEN
        RETURN NULL;
    END IF;
    IF NEW.location LIKE 'flags/%' THEN
        key := split_part(NEW.location, '/', 2);
        SELECT s.state INTO before_state FROM webhook_flag_states s
         WHERE s.org_id = NEW.org_id AND s.flag_key = key;
        after_state := ensign_webhook_flag_state(NEW.org_id, key);
        IF after_state IS NULL THEN
            DELETE FROM webhook_flag_states s WHERE s.org_id = NEW.org_id AND s.flag_key = key;
        ELSE
            INSERT INTO webhook_flag_states (org_id, flag_key, state)
                 VALUES (NEW.org_id, key, after_state)
            ON CONFLICT (org_id, flag_key) DO UPDATE SET state = EXCLUDED.state;
        END IF;
    END IF;
    SELECT o.slug INTO org_slug FROM orgs o WHERE o.id = NEW.org_id;
    INSERT INTO webhook_deliveries (webhook_id, event_id, action, body)
    SELECT w.id, NEW.id, NEW.action,
           jsonb_build_object('id', NEW.id, 'action', NEW.action, 'org', org_slug,
                              'actor', jsonb_build_object('userId', NEW.actor_id,
                                                          'tokenId', NEW.actor_token_id,
                                                          'name', NEW.actor_name),
                              'at', ensign_iso(NEW.created_at), 'location', NEW.location,
                              'summary', NEW.summary, 'before', before_state,
                              'after', after_state)::text
      FROM webhooks w
     WHERE w.org_id = NEW.org_id AND w.active
       AND EXISTS (SELECT 1 FROM unnest(w.events) p WHERE ensign_webhook_matches(p, NEW.action));
    IF FOUND THEN
        PERFORM pg_notify('ensign_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER audit_events_webhooks AFTER INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION ensign_webhook_enqueue();

-- The organization's first webhook seeds the flag states; its last one
-- drops them (they would go stale while no webhook is there).
CREATE FUNCTION ensign_webhook_states_keep() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = NEW.org_id AND w.id <> NEW.id) THEN
            INSERT INTO webhook_flag_states (org_id, flag_key, state)
            SELECT f.org_id, f.key, ensign_webhook_flag_state(f.org_id, f.key)
              FROM flags f WHERE f.org_id = NEW.org_id
            ON CONFLICT (org_id, flag_key) DO UPDATE SET state = EXCLUDED.state;
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = OLD.org_id) THEN
        DELETE FROM webhook_flag_states s WHERE s.org_id = OLD.org_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER webhooks_flag_states AFTER INSERT OR DELETE ON webhooks
    FOR EACH ROW EXECUTE FUNCTION ensign_webhook_states_keep();

-- The deliverer's record of one attempt under its claim: delivered (a 2xx),
-- or retried after retry_base_ms * 2^(attempts - 1) (at most an hour,
-- times a jitter of 0.5 to 1.5), or failed when that retry would fall past
-- 24 hours after window_start. A failure counts against the webhook; the
-- 100th in a row deactivates it, notifies the organization's admins and
-- owners and records an audit event. Returns false when the claim is no
-- longer the row's (nothing written).
CREATE FUNCTION ensign_webhook_record(delivery uuid, claim uuid, delivered boolean,
                                      code integer, duration integer, error text,
                                      retry_base_ms integer)
    RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    d webhook_deliveries;
    w webhooks;
    delay interval;
BEGIN
    SELECT * INTO d FROM webhook_deliveries x WHERE x.id = delivery AND x.claim_id = claim
       FOR UPDATE;
    IF NOT FOUND OR d.status <> 'pending' THEN
        RETURN false;
    END IF;
    IF delivered THEN
        UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(),
               next_attempt_at = NULL, claimed_until = NULL, claim_id = NULL,
               response_code = code, duration_ms = duration, last_error = NULL,
               updated_at = now()
         WHERE id = delivery;
        UPDATE webhooks SET consecutive_failures = 0 WHERE id = d.webhook_id
           AND consecutive_failures <> 0;
        RETURN true;
    END IF;
    delay := make_interval(secs => least(retry_base_ms::float8 * power(2, least(d.attempts - 1, 30)),
                                         3600000) * (0.5 + random()) / 1000);
    UPDATE webhook_deliveries
       SET status = CASE WHEN now() + delay > d.window_start + interval '24 hours'
                         THEN 'failed' ELSE 'pending' END,
           next_attempt_at = CASE WHEN now() + delay > d.window_start + interval '24 hours'
                                  THEN NULL ELSE now() + delay END,
           claimed_until = NULL, claim_id = NULL, response_code = code,
           duration_ms = duration, last_error = left(error, 500), updated_at = now()
     WHERE id = delivery;
    UPDATE webhooks SET consecutive_failures = consecutive_failures + 1
     WHERE id = d.webhook_id RETURNING * INTO w;
    IF w.active AND w.consecutive_failures >= 100 THEN
        UPDATE webhooks SET active = false, deactivated_at = now(), updated_at = now()
         WHERE id = w.id;
        PERFORM ensign_notify(m.user_id, w.org_id, 'webhook.deactivated', 'Webhook deactivated',
                              'After ' || w.consecutive_failures
                              || ' failed deliveries in a row, the webhook to ' || w.url
                              || ' was deactivated.')
           FROM org_members m WHERE m.org_id = w.org_id AND m.role IN ('owner', 'admin');
        PERFORM ensign_audit_record(jsonb_build_object('org_id', w.org_id, 'name', 'Ensign'),
                                    NULL, 'webhook.deactivated',
                                    'Deactivated webhook ' || w.url || ' after '
                                    || w.consecutive_failures || ' failed deliveries',
                                    'webhooks/' || w.id);
    END IF;
    RETURN true;
END
$$;
