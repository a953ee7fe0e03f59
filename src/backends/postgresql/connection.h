// PostgreSQL connections (libpqxx) and the plumbing every part of the service shares: statement
// parameters, result values, and the context (options, statements, pooled connections). Internal.
//
// libpqxx's silent reconnection ("reactivation") is disabled on every connection: a reconnect must
// never hide a lost session lock, and for leases dblock decides itself what may be retried.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_CONNECTION_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_CONNECTION_H_

#include <pqxx/pqxx>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bounded_connect.h"
#include "dblock/postgresql/postgresql.h"
#include "dblock/service/retry.h"
#include "dblock/service/socket_deadlines.h"
#include "dblock/service/sql/args.h"
#include "dblock/service/sql/carried_fence.h"
#include "dblock/service/sql/rows.h"
#include "dblock/service/sql/statement.h"
#include "dblock/sql/features.h"

namespace dblock::postgresql {

inline constexpr const char* kServiceName = "postgresql";

inline std::string uuid_text(const OwnerSecret& secret) {
  std::string hex = secret.hex();
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
         hex.substr(20);
}

// Statement parameters in text form, by position; nullopt is SQL NULL.
class Params {
 public:
  Params& add(std::string_view text) {
    values_.emplace_back(std::string(text));
    return *this;
  }
  Params& add(std::int64_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
  }
  Params& add(const OwnerSecret& secret) {
    values_.emplace_back(uuid_text(secret));
    return *this;
  }
  Params& add_null() {
    values_.emplace_back(std::nullopt);
    return *this;
  }
  Params& add_value(const Value& value) {
    if (std::holds_alternative<std::monostate>(value)) return add_null();
    if (auto* i = std::get_if<std::int64_t>(&value)) return add(*i);
    if (auto* d = std::get_if<double>(&value)) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", *d);
      return add(std::string_view(buf));
    }
    return add(std::string_view(std::get<std::string>(value)));
  }
  Params& add_arg(const dblock::sql::ArgValue& value) {
    if (const auto* secret = std::get_if<OwnerSecret>(&value)) return add(*secret);
    return add_value(dblock::sql::value_of(value));
  }
  std::vector<const char*> pointers() const {
    std::vector<const char*> out;
    for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
    return out;
  }

 private:
  std::vector<std::optional<std::string>> values_;
};


// Turns the portable `?` placeholders of an application's statement (Transaction::execute) into
// $1, $2, ... outside quotes.
inline std::string number_placeholders(std::string_view sql) {
  std::string out;
  int n = 0;
  char quote = 0;
  for (char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

// The lock_timeout setting for a wait: "<n>ms", or "0" (no limit) for waits of a year or more
// (kWaitForever).
inline std::string lock_timeout_text(std::chrono::milliseconds wait) {
  return wait >= std::chrono::hours(24 * 365) ? std::string("0") : std::to_string(wait.count()) + "ms";
}

// What the "{X}" of sql.h stand for with tables named by `prefix` (REQUIRES: validated).
dblock::sql::Placeholders tables(const std::string& prefix);

// A result field as a dblock Value (integers, floats, booleans as 0/1, the rest as text).
Value to_value(const pqxx::field& f);
// A whole result, read by column name.
dblock::sql::Rows rows_of(const pqxx::result& r);
// A whole result as values in column order: an application's own statement.
std::vector<std::vector<Value>> values_of(const pqxx::result& r);
// `text` (tables rendered, ":name" parameters) run in `tx` with `args` bound by name: a statement
// outside a Context's registry (interop.h's, in the application's own transaction). `name` names
// the statement in errors.
dblock::sql::Rows exec_text(pqxx::transaction_base& tx, std::string_view text, const dblock::sql::Args& args,
                            const char* name);

struct Connection {
  std::unique_ptr<BoundedConnection> conn;
  int backend_pid = 0;  // pg_backend_pid() at connect: the server session this connection is on
};

// True when `c` must not be reused after `e`.
bool broken(Connection& c, const std::exception& e) noexcept;

// What every part of the service shares. Constant after construction but for the pool.
class Context {
 public:
  // Validates the options; connects once (a bad URL fails at open, not at first use).
  explicit Context(Options options);

  const Options& options() const { return options_; }
  const dblock::sql::Registry& statements() const { return registry_; }
  // Pooled connections for lease statements, with the retry and in-doubt policy.
  dblock::service::Connections<Connection>& connections() { return connections_; }

  // A new connection: not a standby nor read-only, the fence sequence floored (carried()),
  // reconnection off, kPrepared statements registered. Made and checked by
  // dblock::call_deadline() (bounded_connect.h), to the millisecond.
  std::unique_ptr<Connection> connect() const;
  // The highest fence this process was issued: every fence the service returns is recorded here.
  dblock::sql::CarriedFence& carried() const { return carried_; }
  // Runs sql::kFloorFences on `c` (a writable server's new connection, or one that just
  // migrated); skipped where the sequence is missing or this role may not move it.
  void floor_fences(Connection& c) const;
  // Runs a registered statement in autocommit with `args` bound by name: one of sql::kPrepared by
  // its prepared name (unless Options::prepared is false), else as text. Bounded by
  // dblock::call_deadline(): when it passes first, the connection's socket is shut down and the
  // call fails with a ConnectionError.
  dblock::sql::Rows exec(Connection& c, const dblock::sql::Statement& statement,
                         const dblock::sql::Args& args = {}) const;
  // The same inside the caller's transaction `tx`, unbounded: the caller watches the connection
  // (watch() or dblock::service::call_within) for the whole transaction.
  dblock::sql::Rows exec(pqxx::transaction_base& tx, const dblock::sql::Statement& statement,
                         const dblock::sql::Args& args = {}) const;
  // The rendered text of a registered statement.
  const std::string& text(const dblock::sql::Statement& statement) const { return registry_.text(statement); }
  // The watchdog of the service's sockets (exec and the LISTEN connection).
  dblock::service::SocketDeadlines& deadlines() const { return deadlines_; }
  // Watches `c`'s socket until dblock::call_deadline() for the Watch's lifetime: for statements
  // run through pqxx directly (transactions, migrations), so they too end by the call's deadline.
  dblock::service::SocketDeadlines::Watch watch(Connection& c) const { return watch(*c.conn); }
  dblock::service::SocketDeadlines::Watch watch(pqxx::connection_base& c) const {
    return {deadlines_, c.sock(), call_deadline()};
  }

 private:
  const Options options_;
  const dblock::sql::Registry registry_;
  mutable dblock::service::SocketDeadlines deadlines_;  // thread-safe
  mutable dblock::sql::CarriedFence carried_;        // thread-safe
  dblock::service::Connections<Connection> connections_;
};

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_CONNECTION_H_
