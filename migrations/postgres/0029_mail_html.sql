-- Mail with an HTML part beside its plain text. SQLite: migrations/sqlite/0037.
ALTER TABLE mail_outbox ADD COLUMN sealed_html BYTEA;
