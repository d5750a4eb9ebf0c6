-- The delivery worker reads the head of the outbox in due order, `next_attempt_at, seq`,
-- a bounded window (issue 34). On (next_attempt_at) alone PostgreSQL sorts every due event
-- to take the first few: a million under a backlog. With seq in the index the window is its
-- first rows. (SQLite's index ends with the rowid, which is seq, so it needs no change.)
CREATE INDEX webhook_events_due_in_order ON webhook_events (next_attempt_at, seq) WHERE status = 'pending';
DROP INDEX webhook_events_due;

-- Every poll (a second by default) the worker parks the pending events whose retry window
-- has closed and whose brand has no enabled endpoint. Found through the status alone, that
-- read every pending event, a million under a backlog, each poll. Led by the window's start,
-- it reads only the events whose window has closed: none in a fresh backlog.
CREATE INDEX webhook_events_window ON webhook_events (window_start) WHERE status = 'pending';
