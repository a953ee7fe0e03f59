-- dblock PostgreSQL schema, version 2: the waiter queue leaves the uncontended path.
--
-- queued_until: the latest expiry of the live waiters queued for the name (NULL: never queued);
-- queued_ticket: a hint naming the first of them (the one a release wakes). They let the
-- uncontended acquire and release statements decide "is anybody queued?" from the lease row alone,
-- without reading {{prefix}}waiters (naming a second table in a statement costs a measurable part
-- of an UNLOGGED acquire). A name with live waiters always has a row: a release re-creates it as a
-- free row that keeps the marker, and the reaper skips marked rows, so "no row" means "nobody
-- queued".
ALTER TABLE "{{prefix}}leases" ADD COLUMN queued_until timestamptz, ADD COLUMN queued_ticket bigint;
