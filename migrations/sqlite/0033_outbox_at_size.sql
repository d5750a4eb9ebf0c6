-- Every poll (a second by default) the delivery worker parks the pending events whose retry
-- window has closed and whose brand has no enabled endpoint (issue 34). Found through
-- `webhook_events_status_brand` (status alone), that read every pending event, a million
-- under a backlog, each poll, holding the write lock. Led by the window's start, it reads
-- only the events whose window has closed: none in a fresh backlog. (The status leads so
-- that SQLite, without statistics, prefers this index to the one led by the status alone.)
CREATE INDEX webhook_events_window ON webhook_events (status, window_start) WHERE status = 'pending';
