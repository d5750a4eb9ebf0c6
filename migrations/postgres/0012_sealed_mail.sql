-- Mail bodies sealed at rest with the data key (issue 36): an invitation mail holds a
-- sign-up link, a statement mail the brand's figures. A sealed row keeps `text_body` empty
-- and its text in `sealed_text`; its attachment, if any, is sealed in place. Rows queued
-- before this are sent as they are.
ALTER TABLE mail_outbox ADD COLUMN sealed_text BYTEA;
