-- dblock MySQL/MariaDB schema, version 2: fences come from a sequence instead of the counter row.
--
-- Why: the counter row ('') was advanced by every acquiring statement, so every acquire of every
-- name waited for that one row lock until the previous acquirer's commit, and updating it cost
-- about a tenth of an uncontended acquire. NEXTVAL of a cached InnoDB sequence takes no row lock
-- and writes the sequence table only once per CACHE values.
--
-- Durability: a cached value is handed out only after the sequence table has recorded a value at
-- least as large; that write is redo-logged ahead of the commit of any lease row that carries a
-- value from it (innodb_flush_log_at_trx_commit=1 flushes the log up to that commit), so after a
-- crash the sequence resumes above every fence a surviving lease row holds. Unused cached values
-- are skipped, never reused (gaps are expected).
--
-- Upgrade while older dblock processes run: the CHECK constraint, added without checking the
-- existing counter row, makes every statement of the old version that advances the counter fail
-- (error 4025) from that moment on, so the counter is frozen before the sequence is set above it
-- and no old process can hand out a fence below a new one. Old processes then fail to acquire
-- until they are upgraded; held leases, renewals and releases are unaffected. Every statement is
-- idempotent (MariaDB DDL is not transactional): an interrupted run is completed by the next.

CREATE SEQUENCE IF NOT EXISTS `{{prefix}}fence` START WITH 1 MINVALUE 1 INCREMENT BY 1 CACHE 1000 NOCYCLE ENGINE=InnoDB;

SET SESSION check_constraint_checks = 0;
ALTER TABLE `{{prefix}}leases` ADD CONSTRAINT IF NOT EXISTS `lock_name_not_empty` CHECK (name <> '');
SET SESSION check_constraint_checks = 1;

-- The sequence continues from the frozen counter row when there is one (an upgrade; on a new
-- install it is 0). Without it (dblock re-applies this migration when the sequence was dropped by
-- hand, long after the counter row went) the fences of deleted rows are unknown, so it starts at
-- the server time in microseconds, above anything counting up from 0 could have reached.
-- SETVAL takes literals only and EXECUTE IMMEDIATE no sub-query, hence the session variable.
-- SETVAL never moves a sequence backwards, so a second run changes nothing.
SET @dblock_fence = (SELECT IF(SUM(l.name = '') > 0, MAX(l.fence),
  GREATEST(COALESCE(MAX(l.fence), 0), (SELECT COALESCE(MAX(r.fence), 0) FROM `{{prefix}}readers` r),
           TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))
  FROM `{{prefix}}leases` l);
EXECUTE IMMEDIATE CONCAT('DO SETVAL(`{{prefix}}fence`, ', @dblock_fence, ')');

DELETE FROM `{{prefix}}leases` WHERE name = '';
