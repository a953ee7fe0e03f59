-- dblock PostgreSQL schema, version 5: the tables hold a digest of each owner secret, never the
-- secret. The owner_secret columns keep their name and type; their values become the first 128
-- bits of SHA-256 of the secret's 16 bytes, computed by the server from the secret each statement
-- presents. A role that can read the tables no longer learns what renews, releases or guards.
--
-- Upgrading: run in one transaction with the version record. Processes of an older version still
-- running afterwards keep working beside newer ones (each compares the form it writes), but the
-- leases they held at this moment are refused at their next renewal and reported lost (never held
-- twice: the rows stay held until they expire), and the leases they take afterwards store their
-- secrets as before. Stop them before migrating to have no secret in the tables at all.
UPDATE "{{prefix}}leases" SET owner_secret = encode(substr(sha256(uuid_send(owner_secret)), 1, 16), 'hex')::uuid
  WHERE owner_secret IS NOT NULL;
UPDATE "{{prefix}}readers" SET owner_secret = encode(substr(sha256(uuid_send(owner_secret)), 1, 16), 'hex')::uuid;
UPDATE "{{prefix}}waiters" SET owner_secret = encode(substr(sha256(uuid_send(owner_secret)), 1, 16), 'hex')::uuid;
