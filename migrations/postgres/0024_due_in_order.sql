-- The delivery worker reads the head of the outbox in due order, `next_attempt_at, seq`,
-- a bounded window (issue 34). On (next_attempt_at) alone PostgreSQL sorts every due event
-- to take the first few: a million under a backlog. With seq in the index the window is its
-- first rows. (SQLite's index ends with the rowid, which is seq, so it needs no change.)
CREATE INDEX webhook_events_due_in_order ON webhook_events (next_attempt_at, seq) WHERE status = 'pending';
DROP INDEX webhook_events_due;
