-- dblock MySQL/MariaDB schema, version 3: a contended release hands the lease straight to the
-- first waiter in line.
--
-- A waiter records what the release needs to make it the holder: its holder string and the TTL it
-- asked for (grant_ttl_us; NULL for waiters a release must not grant to: shared waiters, and
-- waiters of versions before this one, which a release only frees the name for, as before).
-- Older processes keep working beside newer ones: their releases free the name, their waiters
-- are woken by the free row as before. Idempotent (MariaDB DDL is not transactional).
ALTER TABLE `{{prefix}}waiters` ADD COLUMN IF NOT EXISTS holder VARCHAR(255) NULL,
  ADD COLUMN IF NOT EXISTS grant_ttl_us BIGINT NULL;
