// dblock/postgresql/postgresql.h — the PostgreSQL backend (libpqxx): options and factory.
//
// Leases live in ordinary tables ("<prefix>leases", ...), fences come from a sequence, expiry is
// computed with clock_timestamp() on the server. Waiters are woken by LISTEN/NOTIFY (one listener
// connection per manager) with a polling fallback. Session locks are pg_advisory_lock on a
// dedicated connection per held lock; transaction locks are pg_advisory_xact_lock.
//
// No libpqxx type appears here; the opt-in interop header (interop.h) works with the
// application's own pqxx transactions.
#ifndef DBLOCK_POSTGRESQL_POSTGRESQL_H_
#define DBLOCK_POSTGRESQL_POSTGRESQL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dblock/service/lease_service.h"

namespace dblock {
struct Url;
namespace postgresql {

struct Options {
  // libpq connection string ("host=... port=... dbname=...") or URI. Required.
  std::string conninfo;
  std::string table_prefix = "dblock_";  // validated like ManagerOptions::table_prefix
  // Lease tables UNLOGGED (faster, emptied by a server crash; the fence sequence stays durable).
  // nullopt (default) leaves the tables as they are; true/false switches them.
  std::optional<bool> unlogged;
  // Check each new session-lock connection for a transaction-pooling proxy (pgbouncer in
  // pool_mode=transaction) and refuse session locks behind one. Default true.
  bool detect_pooler = true;
  // Named server-side prepared statements for the lease statements. Default true; set false when
  // the URL goes through a transaction-mode pooler that cannot keep them (pgbouncer < 1.21).
  bool prepared = true;
  // Wake waiters by LISTEN/NOTIFY, on one connection per manager besides the pool. Default true;
  // with false waiters poll (max_poll), and a waiting process needs one connection, not two.
  bool listen = true;
};

// Connects (and checks the server is not a standby). Throws ConnectionError, UsageError.
std::unique_ptr<LeaseService> make_service(const Options& options);

// From a parsed postgresql:// URL. Query parameters pass through to libpq, except dblock's own:
// unlogged=1|0, detect_pooler=0, prepared=0. connect_timeout defaults to 5 s.
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

// The 64-bit advisory-lock key dblock uses for a lock name: FNV-1a 64 over the name's UTF-8
// bytes, as a signed bigint. Stable across versions and platforms; use it to interoperate with
// code calling pg_advisory_lock directly.
std::int64_t advisory_key(std::string_view name) noexcept;

// The advisory lock that serialises migrations of the tables named by `table_prefix`: the two-key
// form, pg_advisory_xact_lock(class_id, object_id), which PostgreSQL keeps apart from every
// one-key (bigint) lock (pg_locks.objsubid 2, not 1), so that no lock name can meet it. class_id is
// 0x64626C6B ("dblk"); object_id the low 31 bits of advisory_key(table_prefix).
struct MigrationLockKey {
  std::int32_t class_id;
  std::int32_t object_id;
};
MigrationLockKey migration_lock_key(std::string_view table_prefix) noexcept;

}  // namespace postgresql
}  // namespace dblock

#endif  // DBLOCK_POSTGRESQL_POSTGRESQL_H_
