-- Sign-in limits that hold for attempts sent at the same moment (issue 35, decisions 13.0).
--
-- A row of `sign_in_failures` is now written before a password (or two-step code, or the
-- current password on the password form) is checked, under a lock, only while the
-- allowance is not used up; it is deleted when the password was right. So the failures of
-- an email (or an address) are counted as they begin, and N attempts at once check at
-- most the allowance.
--
-- Failures are counted by the email as typed, whether or not an account has it, so a lock
-- tells nothing about which emails have accounts: `account_key` is the SHA-256 (hex) of
-- the email trimmed and lower-cased (`domain::lockout::email_key`), never the email in
-- clear. Rows from before this migration have none and count for their address only (they
-- age out of the 15-minute window). `user_id` stays: the account named, when there is one.
ALTER TABLE sign_in_failures ADD COLUMN account_key TEXT;
CREATE INDEX sign_in_failures_account_key ON sign_in_failures (account_key, at);
