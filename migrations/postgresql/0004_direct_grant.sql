-- dblock PostgreSQL schema, version 4: a contended release hands the lease straight to the first
-- waiter in line.
--
-- A waiter records what the release needs to make it the holder: its holder string and the TTL it
-- asked for (grant_ttl_us; NULL for waiters a release must not grant to: shared waiters, and
-- waiters of versions before this one, which a release still only wakes). The release then names
-- the grantee by its ticket in the notification, so a ticket must name one waiter of a name: the
-- unique index makes it so (a join that collides gets a new ticket), and orders a name's waiters
-- for the release that looks for the first of them.
ALTER TABLE "{{prefix}}waiters" ADD COLUMN holder text, ADD COLUMN grant_ttl_us bigint;
-- Entries are bookkeeping that their waiters refresh; dropping a duplicate costs its waiter only
-- its place (it re-joins at its next refresh).
DELETE FROM "{{prefix}}waiters" a USING "{{prefix}}waiters" b
  WHERE a.name = b.name AND a.ticket = b.ticket AND a.owner_secret > b.owner_secret;
CREATE UNIQUE INDEX "{{prefix}}waiters_ticket" ON "{{prefix}}waiters" (name, ticket);
