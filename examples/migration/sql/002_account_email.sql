-- Not idempotent on purpose: applied twice, this migration fails.
ALTER TABLE example_accounts ADD COLUMN email text;
