-- Every poll (a second by default) the delivery worker parks the pending events whose retry
-- window has closed and whose brand has no enabled endpoint (issue 34). Found through
-- `webhook_events_status_brand` (status alone), that read every pending event, a million
-- under a backlog, each poll, holding the write lock. Led by the window's start, it reads
-- only the events whose window has closed: none in a fresh backlog. SQLite, which plans
-- without statistics, is told to use it (`Store::indexed_by`): it would take the index led
-- by the status.
CREATE INDEX webhook_events_window ON webhook_events (window_start) WHERE status = 'pending';
