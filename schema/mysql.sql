-- dblock MySQL/MariaDB schema: the current full schema (what migrations/mysql/ adds up to; a test
-- checks). "{{prefix}}" stands for the table prefix (default dblock_). Requires MariaDB >= 10.6.

CREATE TABLE IF NOT EXISTS `{{prefix}}schema_version` (
  version    INT          NOT NULL,
  name       VARCHAR(255) NOT NULL,
  applied_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every owner_secret column holds the digest of an owner secret (the first 128 bits of SHA-256 of
-- its 16 bytes), never the secret: statements present the secret and compare its digest.
--
-- One row per lock name. Exclusive: owner_secret/holder identify the holder. Shared: readers are
-- in {{prefix}}readers and expires_at is at least the latest live reader's expiry; permits is the
-- semaphore's N when the readers are permits (NULL otherwise). A row whose expires_at has passed
-- is free; the reaper deletes it.
--
-- queued_until: the latest expiry of the live waiters queued for the name (NULL: never queued), so
-- that the uncontended statements need not read {{prefix}}waiters. A row with live waiters is kept
-- (released rows are marked free, the reaper skips them): no row means nobody is queued.
--
-- fence: from {{prefix}}fence, taken by the acquiring statement itself. Lock names are never empty
-- (the constraint also stops dblock versions before schema 2, which kept a fence counter in a row
-- named '', from handing out fences).
CREATE TABLE IF NOT EXISTS `{{prefix}}leases` (
  name         VARBINARY(255)              NOT NULL,
  owner_secret BINARY(16)                  NULL,
  holder       VARCHAR(255)                NULL,
  mode         ENUM('exclusive', 'shared') NOT NULL DEFAULT 'exclusive',
  fence        BIGINT                      NOT NULL,
  acquired_at  DATETIME(6)                 NOT NULL,
  expires_at   DATETIME(6)                 NOT NULL,
  renewals     BIGINT                      NOT NULL DEFAULT 0,
  queued_until DATETIME(6)                 NULL,
  permits      INT                         NULL,
  PRIMARY KEY (name),
  KEY expires (expires_at),
  CONSTRAINT `lock_name_not_empty` CHECK (name <> '')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The fence source of leases and readers. Cached: the table is written once per 1000 values; after
-- a restart (or FLUSH TABLES) the unused cached values are skipped, never reused.
CREATE SEQUENCE IF NOT EXISTS `{{prefix}}fence` START WITH 1 MINVALUE 1 INCREMENT BY 1 CACHE 1000 NOCYCLE ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS `{{prefix}}readers` (
  name         VARBINARY(255) NOT NULL,
  owner_secret BINARY(16)     NOT NULL,
  holder       VARCHAR(255)   NULL,
  fence        BIGINT         NOT NULL,
  acquired_at  DATETIME(6)    NOT NULL,
  expires_at   DATETIME(6)    NOT NULL,
  renewals     BIGINT         NOT NULL DEFAULT 0,
  PRIMARY KEY (name, owner_secret),
  KEY expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Waiters queue here so that hand-offs go to the longest waiter (ticket = server time of its first
-- attempt, in microseconds); a dead waiter's row expires (until_at) and stops blocking others. A
-- contended release makes the first waiter the holder when it recorded a grant_ttl_us (exclusive
-- waiters do): its holder string, that TTL, but no longer than its entry had left.
CREATE TABLE IF NOT EXISTS `{{prefix}}waiters` (
  name         VARBINARY(255) NOT NULL,
  owner_secret BINARY(16)     NOT NULL,
  ticket       BIGINT         NOT NULL,
  until_at     DATETIME(6)    NOT NULL,
  holder       VARCHAR(255)   NULL,
  grant_ttl_us BIGINT         NULL,
  PRIMARY KEY (name, owner_secret),
  KEY until_at (until_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A record of every force-release, written in the transaction that evicts: when, who forced it
-- (the forcing manager's holder string and the account it connected as), whose lease it ended, its
-- mode, and the name's fence before and after. dblock never deletes these rows.
CREATE TABLE IF NOT EXISTS `{{prefix}}force_releases` (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  at         DATETIME(6)  NOT NULL,
  name       VARBINARY(255) NOT NULL,
  by_holder  VARCHAR(255) NULL,
  by_account VARCHAR(400) NOT NULL,
  holder     TEXT         NULL,
  mode       ENUM('exclusive', 'shared') NOT NULL,
  old_fence  BIGINT       NOT NULL,
  new_fence  BIGINT       NOT NULL,
  PRIMARY KEY (id),
  KEY name_id (name, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- What a read-only (monitoring) account reads: routines with their definer's rights, so that it
-- needs EXECUTE on them and no SELECT on the tables (whose rows it could lock). They refuse to run
-- inside a transaction, so the locks their reads take end with the CALL. A statement ends at a ';'
-- that ends its line.
CREATE PROCEDURE IF NOT EXISTS `{{prefix}}list_leases`(IN p_name VARBINARY(255))
  SQL SECURITY DEFINER READS SQL DATA
BEGIN
  IF @@in_transaction OR NOT @@autocommit THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dblock: call this routine outside a transaction, with autocommit on'; END IF; SELECT l.name, l.mode, l.holder, l.fence, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', l.acquired_at),
    TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', l.expires_at), TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), l.expires_at),
    l.renewals,
    (SELECT COUNT(*) FROM `{{prefix}}readers` r WHERE r.name = l.name AND r.expires_at > UTC_TIMESTAMP(6)),
    (SELECT GROUP_CONCAT(r.holder ORDER BY r.acquired_at SEPARATOR ',') FROM `{{prefix}}readers` r WHERE r.name = l.name
      AND r.expires_at > UTC_TIMESTAMP(6)),
    l.permits
    FROM `{{prefix}}leases` l WHERE l.expires_at > UTC_TIMESTAMP(6) AND (p_name = '' OR l.name = p_name) ORDER BY l.name; END;
CREATE PROCEDURE IF NOT EXISTS `{{prefix}}force_release_history`(IN p_name VARBINARY(255), IN p_limit BIGINT)
  SQL SECURITY DEFINER READS SQL DATA
BEGIN
  IF @@in_transaction OR NOT @@autocommit THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dblock: call this routine outside a transaction, with autocommit on'; END IF; SELECT name, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', at), by_holder, by_account, holder, mode, old_fence, new_fence
    FROM `{{prefix}}force_releases` WHERE p_name = '' OR name = p_name ORDER BY id DESC LIMIT p_limit; END;
