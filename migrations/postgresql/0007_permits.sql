-- dblock PostgreSQL schema, version 7: semaphores. A shared lease row records the permit count its
-- readers were granted under (AcquireOptions::permits); NULL for plain shared and for exclusive
-- leases. An acquire asking for another count while readers live is refused with a clear error.
-- Older processes keep working beside this version (they never set the column).
ALTER TABLE "{{prefix}}leases" ADD COLUMN permits integer;
