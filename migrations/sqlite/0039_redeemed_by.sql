-- Who spent a credit code (decisions 15.5): the person as the audit log names them
-- ("Ada Admin", "Ada Admin (API key)"); null for codes spent before this column, and for
-- codes not spent.
ALTER TABLE redemptions ADD COLUMN redeemed_by TEXT;
