-- dblock PostgreSQL schema, version 3: the reaper resumes where its last batch ended.
--
-- The expiry index also orders by name, so each reap batch starts after the last row the previous
-- batch deleted (keyset order) instead of at the oldest expiry. The index entries of the rows a
-- batch deletes stay until vacuum, and a scan from the oldest expiry walked through all of them
-- again: late in a pass over many expired rows a batch of 100 took milliseconds of server CPU
-- (worse when the rows share one expiry, as after a mass crash: they sit in one deduplicated
-- index entry), and acquires on the same server waited for it.
DROP INDEX "{{prefix}}leases_expires";
CREATE INDEX "{{prefix}}leases_expires" ON "{{prefix}}leases" (expires_at, name);
