-- dblock MySQL/MariaDB schema, version 4: the tables hold a digest of each owner secret, never the
-- secret. The owner_secret columns keep their name and type; their values become the first 128
-- bits of SHA-256 of the secret's 16 bytes, computed by the server from the secret each statement
-- presents. An account that can read the tables no longer learns what renews, releases or guards.
--
-- Upgrading: processes of an older version still running afterwards keep working beside newer
-- ones (each compares the form it writes), but the leases they held at this moment are refused at
-- their next renewal and reported lost (never held twice: the rows stay held until they expire),
-- and the leases they take afterwards store their secrets as before. Stop them before migrating to
-- have no secret in the tables at all.
--
-- Not idempotent, unlike the earlier migrations: a run interrupted after some of these statements
-- and before the version record digests those rows again on the next run. Their holders are then
-- refused at their next renewal and report the lease lost; the rows expire at their TTL. Nothing
-- is ever held twice.
UPDATE `{{prefix}}leases` SET owner_secret = UNHEX(LEFT(SHA2(owner_secret, 256), 32)) WHERE owner_secret IS NOT NULL;
UPDATE `{{prefix}}readers` SET owner_secret = UNHEX(LEFT(SHA2(owner_secret, 256), 32));
UPDATE `{{prefix}}waiters` SET owner_secret = UNHEX(LEFT(SHA2(owner_secret, 256), 32));
