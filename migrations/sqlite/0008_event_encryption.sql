-- Event bodies encrypted at rest (decisions.md 6.5: a database leak must not reveal usable
-- credit codes, and `redemption.created` carries the code in full).
--
-- `body_sealed` holds nonce ‖ ciphertext ‖ tag: XChaCha20-Poly1305 of the exact envelope
-- bytes under the data key, which is not in the database (REHOME_DATA_KEY or the key
-- file), with the event id as associated data. Every new row is written sealed, with an
-- empty `body`. Rows written before this migration keep their clear `body` and a NULL
-- `body_sealed` until the server, opening the database with its key, seals them and
-- empties `body` in one transaction (with SQLite's secure_delete on, then a WAL
-- checkpoint, so the clear bytes do not linger in free space). The worker accepts both
-- forms, so a row is deliverable at every moment.
ALTER TABLE webhook_events ADD COLUMN body_sealed BLOB;
-- Finds the rows still in clear at start without scanning the outbox; new rows are never
-- in it, so it costs nothing to keep.
CREATE INDEX webhook_events_clear ON webhook_events (seq) WHERE body_sealed IS NULL;
