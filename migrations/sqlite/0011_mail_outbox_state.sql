-- The mail worker's state beyond 0010: which worker holds a message's lease (so only it
-- records the attempt's outcome, and a stopping worker releases only its own), and when a
-- message was given up (a permanent SMTP rejection, an unusable address, or its retry
-- window over). PostgreSQL: migrations/postgres/0003_mail_outbox_state.sql, the same
-- columns in the same order.
ALTER TABLE mail_outbox ADD COLUMN lease_owner TEXT;
ALTER TABLE mail_outbox ADD COLUMN failed_at TEXT;
