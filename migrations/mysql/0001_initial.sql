-- dblock MySQL/MariaDB schema, version 1. Times are DATETIME(6) in UTC from UTC_TIMESTAMP(6) on the
-- server. MySQL DDL is not transactional, so every statement is idempotent: a migration interrupted
-- half-way is completed by the next run.

CREATE TABLE IF NOT EXISTS `{{prefix}}schema_version` (
  version    INT          NOT NULL,
  name       VARCHAR(255) NOT NULL,
  applied_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per lock name. Exclusive: owner_secret/holder identify the holder. Shared: readers are
-- in {{prefix}}readers and expires_at is at least the latest live reader's expiry. A row whose
-- expires_at has passed is free; the reaper deletes it.
--
-- queued_until: the latest expiry of the live waiters queued for the name (NULL: never queued), so
-- that the uncontended statements need not read {{prefix}}waiters. A row with live waiters is kept
-- (released rows are marked free, the reaper skips them): no row means nobody is queued.
--
-- The row named '' is the fence counter (lock names are never empty): the acquiring statement
-- advances its fence and hands the value to the lock's row in the same statement. It expires in
-- the year 9999 and is never listed, reaped or released.
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
  PRIMARY KEY (name),
  KEY expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO `{{prefix}}leases` (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)
  VALUES ('', NULL, NULL, 'exclusive', 0, UTC_TIMESTAMP(6), '9999-12-31 23:59:59.999999', 0);

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
-- attempt, in microseconds); a dead waiter's row expires (until_at) and stops blocking others.
CREATE TABLE IF NOT EXISTS `{{prefix}}waiters` (
  name         VARBINARY(255) NOT NULL,
  owner_secret BINARY(16)     NOT NULL,
  ticket       BIGINT         NOT NULL,
  until_at     DATETIME(6)    NOT NULL,
  PRIMARY KEY (name, owner_secret),
  KEY until_at (until_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
