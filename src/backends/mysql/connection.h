// MariaDB connections (MySQL Connector/C++ 1.1, the JDBC-style API) and what every part of the
// service shares: the context (options, statements, pooled connections), named-parameter binding
// and result rows. Internal.
//
// Connector/C++'s automatic reconnect (OPT_RECONNECT) is off everywhere: a reconnect would drop the
// session's GET_LOCKs and open transaction without a word, and for leases dblock decides itself
// what may be retried. Only the cppconn/ headers are used; mysql_driver.h and mysql_connection.h
// would pull Boost into the build for nothing.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_CONNECTION_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_CONNECTION_H_

#include <cppconn/connection.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/statement.h>

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/mysql/mysql.h"
#include "dblock/service/retry.h"
#include "dblock/service/socket_deadlines.h"
#include "dblock/service/sql/args.h"
#include "dblock/service/sql/carried_fence.h"
#include "dblock/service/sql/rows.h"
#include "dblock/service/sql/statement.h"
#include "dblock/sql/features.h"

namespace dblock::mysql {

inline constexpr const char* kServiceName = "mysql";

using dblock::sql::Row;
using dblock::sql::Rows;

using dblock::sql::Arg;
using dblock::sql::Args;

struct Connection {
  // Declared first, destroyed last: statements are closed before their connection.
  std::unique_ptr<::sql::Connection> conn;
  std::int64_t id = 0;  // CONNECTION_ID() at connect
  int socket = -1;      // the library's socket (opened_socket.h), -1 when it could not be told
  std::unique_ptr<::sql::Statement> plain;
  std::vector<std::unique_ptr<::sql::PreparedStatement>> prepared;  // by Registry index
  // Application statements (Transaction, row locks, compare-and-set), most recently used first.
  std::list<std::pair<std::string, std::unique_ptr<::sql::PreparedStatement>>> app;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();
};

// `identifier` (REQUIRES: validated by service::validate_identifier) in backticks, each
// dot-separated part on its own.
std::string quote_identifier(std::string_view identifier);
// GET_LOCK's timeout argument for a wait: seconds, 0 for none, a year for "forever" (negative is
// refused by the server).
double lock_seconds(std::chrono::milliseconds wait);
// The core never passes an empty name, a direct caller might (the tables refuse it too).
void check_name(std::string_view name);

// True when `c` must not be reused after `e`.
bool is_broken(Connection& c, const std::exception& e) noexcept;
// Every row of `rs`, read by column label (unsigned integers above INT64_MAX and decimals as text).
Rows fetch_all(::sql::ResultSet& rs);
// The same as values in column order: an application's own statement.
std::vector<std::vector<Value>> fetch_values(::sql::ResultSet& rs);
// An application's `?` parameter, by position (1-based).
void bind_value(::sql::PreparedStatement& ps, unsigned index, const Value& value);
// A registered statement's argument (secrets as hex digits, what DBLOCK_MY_OWNER digests).
void bind_arg(::sql::PreparedStatement& ps, unsigned index, const dblock::sql::ArgValue& value);

class Context {
 public:
  // Validates the options; connects once (a bad URL fails at open, not at first use).
  explicit Context(Options options);

  const Options& options() const { return options_; }
  // Pooled connections for lease statements, with the retry and in-doubt policy.
  dblock::service::Connections<Connection>& connections() { return connections_; }
  // The watchdog of every connection's socket (Connection::socket).
  dblock::service::SocketDeadlines& deadlines() const { return deadlines_; }
  // Watches `c`'s socket until dblock::call_deadline() for the Watch's lifetime: for work spanning
  // several statements (transactions, migrations), so the whole of it ends by the call's deadline.
  dblock::service::SocketDeadlines::Watch watch(Connection& c) const { return {deadlines_, c.socket, call_deadline()}; }

  using TimePoint = std::chrono::steady_clock::time_point;

  // A new connection: a writable MariaDB >= 10.6, READ COMMITTED, UTC. Throws ConnectionError,
  // UnsupportedError. Made by `deadline` (connect_timeout shortened to what is left; max(): the
  // configured connect_timeout).
  std::unique_ptr<Connection> connect(TimePoint deadline) const;
  std::unique_ptr<Connection> connect() const { return connect(call_deadline()); }
  // The highest fence this process was issued: every fence the service returns is recorded here;
  // a new connection floors the fence sequence above it (sql::kFloorFences).
  dblock::sql::CarriedFence& carried() const { return carried_; }
  // Runs sql::kFloorFences on `c` by `deadline` (a new connection, or one that just migrated);
  // skipped where the sequence is missing or this account may not move it.
  void floor_fences(Connection& c, TimePoint deadline) const;
  // Runs a registered statement, binding its parameters by name. Bounded by `deadline`: a call
  // still unanswered then has its connection's socket shut down and throws ConnectionError.
  Rows query(Connection& c, const dblock::sql::Statement& statement, const Args& args, TimePoint deadline) const;
  Rows query(Connection& c, const dblock::sql::Statement& statement, const Args& args) const {
    return query(c, statement, args, call_deadline());
  }
  std::int64_t update(Connection& c, const dblock::sql::Statement& statement, const Args& args) const;
  // The application statement `text`, prepared on `c` (cached, most recently used first).
  ::sql::PreparedStatement& app_statement(Connection& c, std::string_view text) const;

 private:
  ::sql::PreparedStatement& bound(Connection& c, const dblock::sql::Statement& statement, const Args& args) const;
  // Runs `call` on `c` with c's socket watched until `deadline`; a call cut there throws
  // ConnectionError naming `what`.
  void within_deadline(Connection& c, const char* what, TimePoint deadline, const std::function<void()>& call) const;
  // within_deadline() for a registered statement. A lock-bounded statement whose lock wait ran
  // out (1205) with less than another wait left before `deadline` throws TimeoutError saying so,
  // not retryable: a repetition would be cut at the deadline, leaving its wait on the server.
  void run_statement(Connection& c, const dblock::sql::Statement& statement, TimePoint deadline,
                     const std::function<void()>& call) const;
  // A connection to one server (connect() goes through the URL's list).
  std::unique_ptr<Connection> connect_to(const Options::Endpoint& at, TimePoint deadline) const;
  void open_socket(Connection& c, const Options::Endpoint& at, TimePoint deadline) const;

  const Options options_;
  const dblock::sql::Registry registry_;
  const std::vector<bool> lock_bounded_;  // by Registry index: one of sql::kLockBounded (kLockWaitBound first)
  ::sql::ConnectOptionsMap connect_options_;
  mutable dblock::service::SocketDeadlines deadlines_;  // before connections_: outlives every call
  mutable dblock::sql::CarriedFence carried_;        // thread-safe
  dblock::service::Connections<Connection> connections_;
};

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_CONNECTION_H_
