-- The brand's time zone (issue 31 item 1): an IANA name, checked by the dashboard's
-- Settings page (`domain::settings::TimeZone`); every instant a dashboard page shows is
-- written in it. Dates (collection windows, statement days) are calendar dates, not moved.
ALTER TABLE brands ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'Europe/London';
