-- dblock PostgreSQL schema: the current full schema (what migrations/postgresql/ adds up to; a test
-- checks). "{{prefix}}" stands for the table prefix (default dblock_).

CREATE TABLE "{{prefix}}schema_version" (
  version    integer     PRIMARY KEY,
  name       text        NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The fence source. Sequences are always WAL-logged (also when the lease tables are UNLOGGED), so
-- fences never go back, also across crashes and reaping. Gaps are expected (a refused acquire may
-- consume a value).
CREATE SEQUENCE "{{prefix}}fence_seq" AS bigint;

-- Every owner_secret column holds the digest of an owner secret (the first 128 bits of SHA-256 of
-- its 16 bytes), never the secret: statements present the secret and compare its digest.
--
-- One row per lock name. Exclusive: owner_secret/holder identify the holder. Shared: readers are
-- in {{prefix}}readers and expires_at is at least the latest live reader's expiry; permits is the
-- semaphore's N when the readers are permits (NULL otherwise). A row whose expires_at has passed
-- is free; the reaper deletes it unless waiters are queued for it.
-- queued_until is the latest expiry of the live waiters queued for the name (NULL: never queued)
-- and queued_ticket names the first of them (a hint for whom a release wakes): the uncontended
-- statements read the queue's state here instead of in {{prefix}}waiters. A name with live waiters
-- always has a row (a release leaves a free row carrying the marker), so no row means nobody is
-- queued.
CREATE TABLE "{{prefix}}leases" (
  name         text        PRIMARY KEY,
  owner_secret uuid,
  holder       text,
  mode         text        NOT NULL DEFAULT 'exclusive' CHECK (mode IN ('exclusive', 'shared')),
  fence        bigint      NOT NULL,
  acquired_at  timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  renewals     bigint      NOT NULL DEFAULT 0,
  queued_until  timestamptz,
  queued_ticket bigint,
  permits       integer
);

-- (expires_at, name): the reaper walks expired rows in this order with a cursor.
CREATE INDEX "{{prefix}}leases_expires" ON "{{prefix}}leases" (expires_at, name);

CREATE TABLE "{{prefix}}readers" (
  name         text        NOT NULL,
  owner_secret uuid        NOT NULL,
  holder       text,
  fence        bigint      NOT NULL,
  acquired_at  timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  renewals     bigint      NOT NULL DEFAULT 0,
  PRIMARY KEY (name, owner_secret)
);

CREATE INDEX "{{prefix}}readers_expires" ON "{{prefix}}readers" (expires_at);

-- Waiters queue here so that hand-offs go to the longest waiter (ticket = server time of its first
-- attempt, in microseconds, unique per name); a dead waiter's row expires (until_at) and stops
-- blocking others. A contended release grants the lease to the first live waiter directly, with
-- its holder string and for its TTL (grant_ttl_us, at most until its entry would expire; NULL: wake
-- only, as for shared waiters). UNLOGGED: entries live about a second and are refreshed by their
-- waiters, so a crash that empties the table loses nothing, and queueing costs no WAL flush.
CREATE UNLOGGED TABLE "{{prefix}}waiters" (
  name         text        NOT NULL,
  owner_secret uuid        NOT NULL,
  ticket       bigint      NOT NULL,
  until_at     timestamptz NOT NULL,
  holder       text,
  grant_ttl_us bigint,
  PRIMARY KEY (name, owner_secret)
);

-- A release names its grantee by ticket, and finds the first waiter of a name in ticket order.
CREATE UNIQUE INDEX "{{prefix}}waiters_ticket" ON "{{prefix}}waiters" (name, ticket);

CREATE INDEX "{{prefix}}waiters_until" ON "{{prefix}}waiters" (until_at);

-- A record of every force-release, written by the statement that evicts: when, who forced it (the
-- forcing manager's holder string and the role it connected as), whose lease it ended, its mode,
-- and the name's fence before and after. dblock never deletes these rows.
CREATE TABLE "{{prefix}}force_releases" (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  name       text        NOT NULL,
  by_holder  text,
  by_account text        NOT NULL DEFAULT session_user,
  holder     text,
  mode       text        NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  old_fence  bigint      NOT NULL,
  new_fence  bigint      NOT NULL
);
CREATE INDEX "{{prefix}}force_releases_name" ON "{{prefix}}force_releases" (name, id);
