-- dblock SQLite schema: the current full schema (what migrations/sqlite/ adds up to; a test checks).
-- "{{prefix}}" stands for the table prefix (default dblock_). Expiries, tickets and acquired_at_us
-- are microseconds on the lock file's clock (the clock table below); applied_at_us and at_us are
-- microseconds since the Unix epoch on the writer's system clock.

CREATE TABLE "{{prefix}}schema_version" (
  version       INTEGER PRIMARY KEY NOT NULL,
  name          TEXT    NOT NULL,
  applied_at_us INTEGER NOT NULL
);

-- Every owner_secret column holds the digest of an owner secret (the first 128 bits of SHA-256 of
-- its 16 bytes), never the secret: statements present the secret and compare its digest.
--
-- One row per lock name. Exclusive: owner_secret/holder identify the holder. Shared: readers are
-- in {{prefix}}readers and expires_at_us is at least the latest live reader's expiry; permits is
-- the semaphore's N when the readers are permits (NULL otherwise). A row whose expires_at_us has
-- passed is free; the reaper deletes it.
CREATE TABLE "{{prefix}}leases" (
  name           TEXT    PRIMARY KEY NOT NULL,
  owner_secret   BLOB,
  holder         TEXT,
  mode           TEXT    NOT NULL DEFAULT 'exclusive' CHECK (mode IN ('exclusive', 'shared')),
  fence          INTEGER NOT NULL,
  acquired_at_us INTEGER NOT NULL,
  expires_at_us  INTEGER NOT NULL,
  renewals       INTEGER NOT NULL DEFAULT 0,
  permits        INTEGER
) WITHOUT ROWID;

CREATE INDEX "{{prefix}}leases_expires" ON "{{prefix}}leases" (expires_at_us);

CREATE TABLE "{{prefix}}readers" (
  name           TEXT    NOT NULL,
  owner_secret   BLOB    NOT NULL,
  holder         TEXT,
  fence          INTEGER NOT NULL,
  acquired_at_us INTEGER NOT NULL,
  expires_at_us  INTEGER NOT NULL,
  renewals       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (name, owner_secret)
) WITHOUT ROWID;

CREATE INDEX "{{prefix}}readers_expires" ON "{{prefix}}readers" (expires_at_us);

-- Waiters queue here so that hand-offs go to the longest waiter (ticket = backend time of its
-- first attempt) instead of whoever polls first. A waiter refreshes until_us while it waits; a
-- dead waiter's row expires and stops blocking others.
CREATE TABLE "{{prefix}}waiters" (
  name         TEXT    NOT NULL,
  owner_secret BLOB    NOT NULL,
  ticket       INTEGER NOT NULL,
  until_us     INTEGER NOT NULL,
  PRIMARY KEY (name, owner_secret)
) WITHOUT ROWID;

CREATE INDEX "{{prefix}}waiters_until" ON "{{prefix}}waiters" (until_us);

-- The fence source: one row that only grows. It is never reaped, so fences are never reused.
CREATE TABLE "{{prefix}}fence_counter" (
  id    INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
  value INTEGER NOT NULL
);

INSERT INTO "{{prefix}}fence_counter" (id, value) VALUES (1, 0);

-- Every statement that issues a fence writes it into a lease row; these triggers carry it to the
-- counter in the same transaction, so an acquire stays a single statement.
CREATE TRIGGER "{{prefix}}fence_on_insert" AFTER INSERT ON "{{prefix}}leases"
BEGIN
  UPDATE "{{prefix}}fence_counter" SET value = NEW.fence WHERE id = 1 AND value < NEW.fence;
END;

CREATE TRIGGER "{{prefix}}fence_on_update" AFTER UPDATE OF fence ON "{{prefix}}leases"
BEGIN
  UPDATE "{{prefix}}fence_counter" SET value = NEW.fence WHERE id = 1 AND value < NEW.fence;
END;

-- A record of every force-release, written in the transaction that evicts: when, who forced it
-- (the forcing manager's holder string), whose lease it ended, its mode, and the name's fence
-- before and after. dblock never deletes these rows.
CREATE TABLE "{{prefix}}force_releases" (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  at_us     INTEGER NOT NULL,
  name      TEXT    NOT NULL,
  by_holder TEXT,
  holder    TEXT,
  mode      TEXT    NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  old_fence INTEGER NOT NULL,
  new_fence INTEGER NOT NULL
);
CREATE INDEX "{{prefix}}force_releases_name" ON "{{prefix}}force_releases" (name, id);

-- The lock file's clock: time = base_us + the machine's CLOCK_BOOTTIME in microseconds, for the
-- boot named by boot_id. Wall-clock steps do not move it. The first process of a new boot moves
-- the base above every time stored in the file, so rows of an earlier boot count as expired;
-- '' (never set): the first process starts the scale at its wall clock.
CREATE TABLE "{{prefix}}clock" (
  id      INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
  boot_id TEXT    NOT NULL,
  base_us INTEGER NOT NULL
);
INSERT INTO "{{prefix}}clock" (id, boot_id, base_us) VALUES (1, '', 0);
