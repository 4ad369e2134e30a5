-- 0014_schedules.sql - scheduled changes of a flag's environment
-- configuration (src/api/schedules.c makes, lists and cancels them;
-- src/api/schedule_apply.c applies them in the scheduler process;
-- doc/choices.md, "Scheduled changes").
--
-- Invariants kept here:
-- - status moves only from pending: to applied (applied_at set), failed
--   (error set) or cancelled (cancelled_at set); never back.
-- - a pending row always has its flag (flag_id not NULL): deleting a flag
--   first cancels its pending schedules (trigger below), then the foreign
--   key keeps the cancelled rows with flag_id NULL and the key in flag_key.
-- - every row inserted NOTIFYs ensign_schedules (its at as payload), so
--   the schedulers of every node wake and set their timer to the soonest.
-- - created_by_user_id is NULL for a schedule made with an organization
--   token; created_by_name keeps the actor's name at creation (the token's
--   name then), created_by_token_id the token (no foreign key: like the
--   audit log's actor, it outlives a deleted token).

CREATE TABLE flag_schedules (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id              uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    flag_id             uuid NULL REFERENCES flags (id) ON DELETE SET NULL,
    flag_key            text NOT NULL CHECK (ensign_key_ok(flag_key)),
    environment_id      uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    at                  timestamptz NOT NULL,
    changes             jsonb NOT NULL CHECK (jsonb_typeof(changes) = 'object'),
    status              text NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'applied', 'failed', 'cancelled')),
    created_by_user_id  uuid NULL REFERENCES users (id) ON DELETE SET NULL,
    created_by_token_id uuid NULL,
    created_by_name     text NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    applied_at          timestamptz NULL,
    cancelled_at        timestamptz NULL,
    error               text NULL CHECK (char_length(error) <= 2000),
    CONSTRAINT flag_schedules_pending_flag_check CHECK (status <> 'pending' OR flag_id IS NOT NULL)
);
-- The scheduler's claim and its timer: the soonest pending rows.
CREATE INDEX flag_schedules_due_idx ON flag_schedules (at, id) WHERE status = 'pending';
CREATE INDEX flag_schedules_flag_idx ON flag_schedules (flag_id, at);
CREATE INDEX flag_schedules_org_idx ON flag_schedules (org_id, status, at);

-- The API form: {id, flag, at, environment, changes, status,
-- createdByUserId, createdAt, appliedAt, error}.
CREATE FUNCTION ensign_schedule_json(s flag_schedules) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT jsonb_build_object('id', s.id, 'flag', s.flag_key, 'at', ensign_iso(s.at),
                                    'environment',
                                    (SELECT e.key FROM environments e
                                      WHERE e.id = s.environment_id),
                                    'changes', s.changes, 'status', s.status,
                                    'createdByUserId', s.created_by_user_id,
                                    'createdAt', ensign_iso(s.created_at),
                                    'appliedAt', ensign_iso(s.applied_at),
                                    'error', s.error) $$;

CREATE FUNCTION ensign_schedules_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('ensign_schedules', ensign_iso(NEW.at));
    RETURN NULL;
END
$$;

CREATE TRIGGER flag_schedules_notify
    AFTER INSERT ON flag_schedules
    FOR EACH ROW EXECUTE FUNCTION ensign_schedules_notify();

-- Deleting a flag cancels its pending schedules. A scheduler applying one
-- holds the schedule's row lock and takes the flag's with NOWAIT, so the
-- two never wait for each other in a cycle (src/api/schedule_apply.c).
CREATE FUNCTION ensign_flag_schedules_cancel() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE flag_schedules
       SET status = 'cancelled', cancelled_at = now(), error = 'the flag was deleted'
     WHERE flag_id = OLD.id AND status = 'pending';
    RETURN OLD;
END
$$;

CREATE TRIGGER flags_cancel_schedules
    BEFORE DELETE ON flags
    FOR EACH ROW EXECUTE FUNCTION ensign_flag_schedules_cancel();
