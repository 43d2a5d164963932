-- The append-only audit table of the router (crates/fedsearch-router/src/audit.rs) and the
-- role it writes with: that role may INSERT and nothing else (no SELECT, UPDATE, DELETE,
-- TRUNCATE), so a compromised router cannot rewrite or read back the trail.
-- Run as the table's owner; set the router's `audit.postgres.url_env` variable to a DSN of
-- :writer. psql -v writer=fedsearch_audit_writer -f audit-postgres.sql
CREATE TABLE IF NOT EXISTS fedsearch_audit (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL,
    trace_id text NOT NULL,
    subject  text,
    channel  text NOT NULL,
    method   text NOT NULL,
    allowed  boolean NOT NULL,
    code     text NOT NULL,
    record   jsonb NOT NULL
);
REVOKE ALL ON fedsearch_audit FROM PUBLIC;
REVOKE ALL ON fedsearch_audit FROM :"writer";
GRANT INSERT ON fedsearch_audit TO :"writer";
