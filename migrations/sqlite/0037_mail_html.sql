-- Mail with an HTML part beside its plain text (the storefront buyer's mails, decisions
-- 14.5), sealed like the text and erased with it once sent. PostgreSQL: migrations/postgres/0029.
ALTER TABLE mail_outbox ADD COLUMN sealed_html BLOB;
