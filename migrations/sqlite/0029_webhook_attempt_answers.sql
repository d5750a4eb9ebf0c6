-- What the endpoint answered, for the dashboard's event page (issue 31 item 7): at most the
-- first 1024 bytes of the answer's body, as text (cut at a character boundary, invalid
-- UTF-8 and NUL shown as U+FFFD). NULL when there was no answer or it had no body.
ALTER TABLE webhook_attempts ADD COLUMN response_excerpt TEXT;
