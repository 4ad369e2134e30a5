-- 0016_audit_notify.sql - tells listening workers that an organization's
-- audit log grew (src/accounts/org_events.c, GET /v1/orgs/{org}/events;
-- doc/choices.md, "The organization change stream").
--
-- After each statement that inserts audit events, one NOTIFY ensign_audit
-- per organization touched, its payload the organization's id. PostgreSQL
-- delivers a NOTIFY at commit (never for a rolled-back transaction) and
-- folds identical ones of one transaction into one, so a write that adds
-- many events wakes each listener once. The payload only names the
-- organization: a listener reads the events themselves (seq greater than
-- what it has sent), so a NOTIFY lost while its connection was down costs
-- nothing once it reads again.

CREATE FUNCTION ensign_audit_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    org uuid;
BEGIN
    FOR org IN SELECT DISTINCT a.org_id FROM added a LOOP
        PERFORM pg_notify('ensign_audit', org::text);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER audit_events_notify AFTER INSERT ON audit_events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ensign_audit_notify();
