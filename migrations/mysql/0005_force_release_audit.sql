-- dblock MySQL/MariaDB schema, version 5: a record of every force-release, written in the
-- transaction that evicts (so there is no eviction without its record): when, who forced it (the
-- forcing manager's holder string and the account it connected as), whose lease it ended, its
-- mode, and the name's fence before and after. dblock never deletes these rows. Older processes
-- keep working beside this version; their force-releases leave no record. Idempotent.
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
