-- Finding a brand's listing by SKU (`GET /v1/listings?sku=`, decisions 11.2).
CREATE INDEX listings_brand_sku ON listings (brand_id, sku) WHERE sku IS NOT NULL;
