-- Delivered webhook events leave a window after delivery (issue 34,
-- REHOME_RETENTION_WEBHOOK_EVENTS_DAYS): the retention job finds the first delivered without
-- reading the pending, the dead, or the events still inside the window.
CREATE INDEX webhook_events_delivered ON webhook_events (delivered_at, seq) WHERE status = 'delivered';
