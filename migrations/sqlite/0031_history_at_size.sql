-- A brand's delivery log by status (issue 34): the dashboard's home counts the dead events
-- and the Deliveries page lists one status, newest first. With only (brand_id, seq), both
-- read every event of the brand to find the few of one status: a million for a big brand.
-- The status leads, so a list of every status keeps (brand_id, seq), which gives its order:
-- led by brand_id, this index was chosen there too and its rows sorted (2.5 s at 500,000).
CREATE INDEX webhook_events_status_brand ON webhook_events (status, brand_id, seq);

-- The wallet's balances and the home's and Wallet's sales by month read every ledger entry
-- of the brand (a year of a big brand's sales: 50,000 and more) through (brand_id, id), a
-- table row each: 90 ms for the Wallet page at 50,000 entries. These two hold what those
-- sums read, so they are answered from the index alone.
CREATE INDEX ledger_entries_balances ON ledger_entries (brand_id, remittance_id, available_at, amount_pence);
CREATE INDEX ledger_entries_months ON ledger_entries (brand_id, delivered_at, gross_pence);
