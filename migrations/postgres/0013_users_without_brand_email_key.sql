-- A removed member can be invited again as a new person (issue 36): the table-level
-- UNIQUE (brand_id, email) of 0001 made an invitation revive the removed member's row. Who
-- may hold an email is `users_live_email` (one live user per email across all brands).
ALTER TABLE users DROP CONSTRAINT users_brand_id_email_key;
CREATE INDEX users_brand ON users (brand_id);
