-- dblock MySQL/MariaDB schema, version 7: semaphores. A shared lease row records the permit count
-- its readers were granted under (AcquireOptions::permits); NULL for plain shared and for exclusive
-- leases. An acquire asking for another count while readers live is refused with a clear error.
-- list_leases returns it as an eleventh column; CREATE OR REPLACE keeps the EXECUTE grants given on
-- it (DROP PROCEDURE would remove them). Older processes keep working beside this version (they
-- never set the column, and read the first ten). A statement ends at a ';' that ends its line.
ALTER TABLE `{{prefix}}leases` ADD COLUMN IF NOT EXISTS permits INT NULL;
CREATE OR REPLACE PROCEDURE `{{prefix}}list_leases`(IN p_name VARBINARY(255))
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
