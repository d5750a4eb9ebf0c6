-- An attempt counted against the sign-in limits is in flight until its secret is checked:
-- a wrong one is then settled (a failure), a right one deleted. An attempt refused while
-- others are in flight waits for them, so right passwords sent at once all get in.
-- Rows from before this column are failures.
ALTER TABLE sign_in_failures ADD COLUMN settled BOOLEAN NOT NULL DEFAULT TRUE;
