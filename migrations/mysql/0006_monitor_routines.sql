-- dblock MySQL/MariaDB schema, version 6: what a read-only (monitoring) account reads, through
-- routines that run with their definer's rights, so that it needs EXECUTE on them and no SELECT on
-- the tables. An account that can SELECT a table can also lock its rows (LOCK IN SHARE MODE, FOR
-- UPDATE, or any read of a SERIALIZABLE transaction, also through a view) and so stall every
-- acquire, renewal and release; these routines refuse to run inside a transaction (or with
-- autocommit off), so the locks their reads take end with the CALL.
--
-- {{prefix}}list_leases(name): live leases, all of them for name '' (the columns of LeaseInfo).
-- {{prefix}}force_release_history(name, limit): recorded force-releases, newest first, of every
-- name for name ''. Older processes keep working beside this version (they read the tables).
-- Idempotent. A statement ends at a ';' that ends its line.
CREATE PROCEDURE IF NOT EXISTS `{{prefix}}list_leases`(IN p_name VARBINARY(255))
  SQL SECURITY DEFINER READS SQL DATA
BEGIN
  IF @@in_transaction OR NOT @@autocommit THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dblock: call this routine outside a transaction, with autocommit on'; END IF; SELECT l.name, l.mode, l.holder, l.fence, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', l.acquired_at),
    TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', l.expires_at), TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), l.expires_at),
    l.renewals,
    (SELECT COUNT(*) FROM `{{prefix}}readers` r WHERE r.name = l.name AND r.expires_at > UTC_TIMESTAMP(6)),
    (SELECT GROUP_CONCAT(r.holder ORDER BY r.acquired_at SEPARATOR ',') FROM `{{prefix}}readers` r WHERE r.name = l.name
      AND r.expires_at > UTC_TIMESTAMP(6))
    FROM `{{prefix}}leases` l WHERE l.expires_at > UTC_TIMESTAMP(6) AND (p_name = '' OR l.name = p_name) ORDER BY l.name; END;
CREATE PROCEDURE IF NOT EXISTS `{{prefix}}force_release_history`(IN p_name VARBINARY(255), IN p_limit BIGINT)
  SQL SECURITY DEFINER READS SQL DATA
BEGIN
  IF @@in_transaction OR NOT @@autocommit THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dblock: call this routine outside a transaction, with autocommit on'; END IF; SELECT name, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', at), by_holder, by_account, holder, mode, old_fence, new_fence
    FROM `{{prefix}}force_releases` WHERE p_name = '' OR name = p_name ORDER BY id DESC LIMIT p_limit; END;
