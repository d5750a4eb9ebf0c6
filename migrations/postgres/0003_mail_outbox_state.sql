-- The mail worker's state beyond 0002: the lease owner and when a message was given up.
-- The same columns, in the same order, as migrations/sqlite/0011_mail_outbox_state.sql
-- (see that file for what each one means).
ALTER TABLE mail_outbox ADD COLUMN lease_owner TEXT;
ALTER TABLE mail_outbox ADD COLUMN failed_at TIMESTAMPTZ;
