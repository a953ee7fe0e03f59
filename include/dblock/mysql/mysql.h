// dblock/mysql/mysql.h — the MySQL/MariaDB backend (MySQL Connector/C++ 1.1): options and factory.
//
// Leases live in ordinary InnoDB tables ("<prefix>leases", ...). Expiry is computed with
// UTC_TIMESTAMP(6) on the server. Fences come from the InnoDB sequence "<prefix>fence" (NEXTVAL in
// the acquiring statement itself; schema 1 used a counter row, see
// migrations/mysql/0002_fence_sequence.sql). A cached value is handed out only after the sequence
// has recorded a larger one in the redo log, ahead of the lease row's commit, so with
// innodb_flush_log_at_trx_commit=1 a fence is never reused after a server crash; the unused cached
// values are skipped (gaps are expected).
//
// Server requirement: MariaDB >= 10.6. The lease statements use MariaDB's INSERT ... RETURNING and
// prepared compound statements (BEGIN NOT ATOMIC ... END) to stay at one round trip each, and the
// row-lock helper uses SKIP LOCKED and SET STATEMENT. Opening a MySQL (Oracle) server or an older
// MariaDB throws UnsupportedError naming what is missing. With binary logging on, binlog_format
// must be ROW or MIXED (MariaDB's default): sessions run at READ COMMITTED, see below.
//
// Waiting: MariaDB has no LISTEN/NOTIFY. While this backend holds a lease for longer than
// Options::beacon_delay, a background thread holds GET_LOCK on a per-name "beacon" on a dedicated
// connection and lets go right after the lease row is released. Every waiter waits server-side
// (NativeWait::wait_for_turn): blocked in GET_LOCK on that beacon while there is one, otherwise
// re-reading the row every 0.5 ms for as long as a beacon may still appear (a lease younger than
// the beacon delay plus a margin), and returns to the client only when it is its turn, so that a
// release reaches the next waiter in line without a client round trip. Without a beacon past that
// (beacon=0, or lost with its connection) waiters poll from the client.
//
// Session locks are GET_LOCK / RELEASE_LOCK / IS_USED_LOCK on a dedicated connection per held lock
// (exclusive only: MySQL has no shared named locks, LockMode::kShared throws UnsupportedError).
// GET_LOCK is server-wide, so keys are "<database>:<name>" (see lock_key()). Connector/C++'s
// automatic reconnect is always off: a reconnect would silently drop every GET_LOCK of the
// session, so a changed connection id means the lock is lost.
//
// Transaction locks (run_in_transaction_lock): MySQL has no transaction-scoped named lock. dblock
// takes GET_LOCK(lock_key(database, name)) on the transaction's own connection before START
// TRANSACTION and releases it right after COMMIT/ROLLBACK, in the same round trip; the server drops
// it if the connection dies. Transaction locks and session locks of the same name therefore
// exclude each other (as PostgreSQL's advisory locks do).
//
// Guarded writes (run_guarded) check the lease row inside the transaction with LOCK IN SHARE MODE,
// so it cannot be taken over, released or force-released before the commit. MySQL commits
// implicitly around DDL: a CREATE/ALTER in a guarded body ends the guarded transaction there.
// Row locks: NOWAIT, SKIP LOCKED, and a wait bound of RowLockRequest::wait_timeout enforced with
// max_statement_time (innodb_lock_wait_timeout only counts whole seconds).
//
// Sessions: every connection runs with time_zone '+00:00' and READ COMMITTED isolation (PostgreSQL's
// default: no gap locks between lease statements and the reaper). Application statements run through
// Transaction (guarded writes, row locks, transaction locks) see the same settings.
//
// Thread safety: a backend is used by one LockManager, from many threads; it synchronises its own
// connections. No Connector/C++ type appears here.
#ifndef DBLOCK_MYSQL_MYSQL_H_
#define DBLOCK_MYSQL_MYSQL_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"

namespace dblock {
struct Url;
namespace mysql {

struct Options {
  // TCP host (default "127.0.0.1") and port (default 3306). As with every MySQL client, the host
  // "localhost" means the Unix socket (`socket`, else the client library's default path).
  std::string host = "127.0.0.1";
  int port = 3306;
  // More TCP servers, tried in order after host:port when a server cannot be reached or is
  // read-only (a replica): the first writable one is used. For a primary and its replicas when
  // failover is by promotion, not by a proxy (README, "Failover"). Not with `socket`.
  struct Endpoint {
    std::string host;
    int port = 3306;
  };
  std::vector<Endpoint> more_hosts;
  std::string socket;  // Unix socket path; empty (default): TCP
  std::string user;
  std::string password;  // never printed
  // The database holding the lock tables. Required (GET_LOCK keys are prefixed with it too).
  std::string database;
  std::string table_prefix = "dblock_";  // validated like ManagerOptions::table_prefix

  // Client timeouts in seconds. connect: default 5, shortened to what is left of a call's
  // deadline. read/write: default 0 = none (a read timeout shorter than the longest wait would
  // break blocking GET_LOCK waits, which are bounded by the caller's wait instead). Lease calls are
  // bounded by their deadlines without them (docs/backends/mysql.md, "Call deadlines").
  int connect_timeout_s = 5;
  int read_timeout_s = 0;
  int write_timeout_s = 0;

  // TLS, passed to Connector/C++ (sslCA, sslCert, sslKey, sslVerify). Empty: not set.
  std::string ssl_ca;
  std::string ssl_cert;
  std::string ssl_key;
  bool ssl_verify = false;

  // Release beacons (see the file comment). Default on. beacon_delay: how long a lease must have
  // been held before its beacon is taken, so that a short acquire/release pair never pays for it.
  // Default 2 ms; 0 takes it at once.
  bool beacon = true;
  std::chrono::microseconds beacon_delay{2'000};
};

// Connects (and checks the server is a writable MariaDB >= 10.6). Throws ConnectionError (unreachable,
// wrong credentials, unknown database, read-only server), UnsupportedError (not MariaDB >= 10.6),
// UsageError (bad options).
std::unique_ptr<LeaseService> make_service(const Options& options);

// From a parsed mysql:// or mariadb:// URL: mysql://user:pw@host:port/database?param=value&...
// Parameters: socket=/path, connect_timeout=S (default 5), read_timeout=S, write_timeout=S,
// ssl_ca=, ssl_cert=, ssl_key=, ssl_verify=1, beacon=0 (poll instead), beacon_delay_us=N.
// Anything else is a UsageError (a misspelt parameter must not be ignored silently).
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

// The GET_LOCK key dblock uses for a session or transaction lock named `name` in `database`:
// "<database>:<name>" when that is at most 64 characters and 192 bytes (MySQL's and MariaDB's
// limits), otherwise "<database, cut to 22 bytes>:\x1f<40 hex digits of SHA-1("<database>:<name>")>".
// The control character 0x1F (which no name or database name may hold) keeps the hashed keys apart
// from every short one: a 40-hex name never meets a long name's key, nor dblock's own keys, which
// take the same hashed form over other input. Use it to interoperate with code calling GET_LOCK
// directly. (Before issue 35 the hashed form had no 0x1F: long names' keys differ from those of
// older versions; short keys are unchanged.)
std::string lock_key(std::string_view database, std::string_view name);

}  // namespace mysql
}  // namespace dblock

#endif  // DBLOCK_MYSQL_MYSQL_H_
