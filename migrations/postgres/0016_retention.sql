-- Retention (issue 36): one job deletes what is past its window, in small batches. It runs
-- on every node, one node at a time: the node that takes the lease of a job's row here runs
-- it, then sets when it is next due (`next_run_at`), so N nodes run it once per interval.
-- SQLite: migrations/sqlite/0022_retention.sql, the same columns in the same order.
CREATE TABLE job_leases (
    name          TEXT PRIMARY KEY,
    lease_owner   TEXT,
    leased_until  TIMESTAMPTZ,
    next_run_at   TIMESTAMPTZ NOT NULL
);

-- The batches of sign-in failures past their window find them without reading the table
-- (an attack can leave millions of rows; the other indexes all begin with another column).
CREATE INDEX sign_in_failures_at ON sign_in_failures (at, id);
