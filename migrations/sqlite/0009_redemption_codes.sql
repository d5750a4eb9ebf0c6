-- Credit codes sealed with the data key (XChaCha20-Poly1305, the redemption id as
-- associated data), so the brand can read its codes back through polling while a copy of
-- the database alone reveals none. `code_hash` stays the lookup for redeeming; rows written
-- before this migration have no sealed code and poll with their hint.
ALTER TABLE redemptions ADD COLUMN code_sealed BLOB;
