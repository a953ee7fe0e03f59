-- dblock SQLite schema, version 5: semaphores. A shared lease row records the permit count its
-- readers were granted under (AcquireOptions::permits); NULL for plain shared and for exclusive
-- leases. An acquire asking for another count while readers live is refused with a clear error.
ALTER TABLE "{{prefix}}leases" ADD COLUMN permits INTEGER;
