-- The dashboard's search finds credit codes by their last four characters (the stored
-- hint) within a brand without walking the brand's redemptions.
CREATE INDEX redemptions_brand_hint ON redemptions (brand_id, code_hint) WHERE code_hint IS NOT NULL;
