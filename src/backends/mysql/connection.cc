#include "connection.h"

#include <cppconn/datatype.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/opened_socket.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::mysql {

namespace {

constexpr int kConflictAttempts = 4;            // per statement, for deadlocks and lock wait timeouts
constexpr std::size_t kAppStatementCache = 32;  // prepared application statements per connection

dblock::sql::Placeholders tables(const std::string& prefix) {
  dblock::sql::Placeholders p = dblock::sql::lease_tables(prefix, &quote_identifier);
  p.set('F', quote_identifier(prefix + "fence"))
      .set('Q', "'" + quote_identifier(prefix + "fence") + "'")  // as a string literal (validated prefix)
      .set('M', quote_identifier(prefix + "list_leases"))
      .set('Y', quote_identifier(prefix + "force_release_history"));
  return p;
}

::sql::Driver* driver() {
  // get_driver_instance() fills a static map without a lock: call it once, thread-safely.
  static ::sql::Driver* instance = get_driver_instance();
  return instance;
}

::sql::ConnectOptionsMap connect_options(const Options& o) {
  ::sql::ConnectOptionsMap m;
  m["hostName"] = ::sql::SQLString(o.socket.empty() ? o.host : "localhost");
  m["port"] = o.port;
  if (!o.socket.empty()) m["socket"] = ::sql::SQLString(o.socket);
  m["userName"] = ::sql::SQLString(o.user);
  m["password"] = ::sql::SQLString(o.password);
  m["schema"] = ::sql::SQLString(o.database);
  m["OPT_RECONNECT"] = false;
  m["OPT_CHARSET_NAME"] = ::sql::SQLString("utf8mb4");
  m["CLIENT_MULTI_STATEMENTS"] = false;
  m["CLIENT_FOUND_ROWS"] = false;  // affected rows = changed rows (the default, made explicit)
  m["OPT_CONNECT_TIMEOUT"] = o.connect_timeout_s;
  if (o.read_timeout_s > 0) m["OPT_READ_TIMEOUT"] = o.read_timeout_s;
  if (o.write_timeout_s > 0) m["OPT_WRITE_TIMEOUT"] = o.write_timeout_s;
  if (!o.ssl_ca.empty()) m["sslCA"] = ::sql::SQLString(o.ssl_ca);
  if (!o.ssl_cert.empty()) m["sslCert"] = ::sql::SQLString(o.ssl_cert);
  if (!o.ssl_key.empty()) m["sslKey"] = ::sql::SQLString(o.ssl_key);
  if (o.ssl_verify) m["sslVerify"] = true;
  return m;
}

const Options& checked(const Options& options) {
  service::validate_table_prefix(options.table_prefix);
  if (options.database.empty()) throw UsageError("mysql: no database given (mysql://host/database)", kServiceName);
  // GET_LOCK keys (keys.cc) rely on it: a control character marks their hashed form.
  if (std::any_of(options.database.begin(), options.database.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; })) {
    throw UsageError("mysql: the database name contains a control character", kServiceName);
  }
  if (options.port < 1 || options.port > 65535) throw UsageError("mysql: port out of range", kServiceName);
  for (const Options::Endpoint& e : options.more_hosts) {
    if (e.host.empty() || e.port < 1 || e.port > 65535) throw UsageError("mysql: a host of the list is empty or its port out of range", kServiceName);
  }
  if (!options.socket.empty() && !options.more_hosts.empty()) {
    throw UsageError("mysql: a Unix socket names one server; it cannot go with more hosts", kServiceName);
  }
  if (options.beacon_delay.count() < 0) throw UsageError("mysql: beacon_delay must not be negative", kServiceName);
  return options;
}

// A compound statement ends with an OK packet after its result set; consume it so that the
// connection is ready for the next command.
void drain(::sql::PreparedStatement& ps) {
  for (int i = 0; i < 8 && ps.getMoreResults(); ++i) {
  }
}

}  // namespace

Connection::~Connection() {
  app.clear();
  for (auto& p : prepared) p.reset();
  plain.reset();
  conn.reset();
}

std::string quote_identifier(std::string_view identifier) {
  std::string out = "`";
  for (char c : identifier) out += c == '.' ? std::string("`.`") : std::string(1, c);
  return out + "`";
}

double lock_seconds(std::chrono::milliseconds wait) {
  constexpr double kForeverSeconds = 365.0 * 24 * 3600;
  if (wait <= std::chrono::milliseconds::zero()) return 0.0;
  const double s = static_cast<double>(wait.count()) / 1000.0;
  return s >= kForeverSeconds ? kForeverSeconds : s;
}

void check_name(std::string_view name) {
  if (name.empty()) throw UsageError("mysql: lock name is empty", kServiceName);
}

bool is_broken(Connection& c, const std::exception& e) noexcept {
  if (is_connection_failure(e) || dynamic_cast<const ConnectionError*>(&e) || dynamic_cast<const InDoubtError*>(&e)) {
    return true;
  }
  try {
    return !c.conn || c.conn->isClosed();
  } catch (...) {
    return true;
  }
}

void bind_value(::sql::PreparedStatement& ps, unsigned index, const Value& value) {
  bind_arg(ps, index, dblock::sql::Arg("", value).value);
}

void bind_arg(::sql::PreparedStatement& ps, unsigned index, const dblock::sql::ArgValue& value) {
  if (auto* secret = std::get_if<OwnerSecret>(&value)) {
    ps.setString(index, ::sql::SQLString(secret->hex()));  // :secret is hex digits (DBLOCK_MY_OWNER)
  } else if (auto* i = std::get_if<std::int64_t>(&value)) {
    ps.setInt64(index, *i);
  } else if (auto* d = std::get_if<double>(&value)) {
    ps.setDouble(index, *d);
  } else if (auto* s = std::get_if<std::string>(&value)) {
    ps.setString(index, ::sql::SQLString(*s));
  } else {
    ps.setNull(index, ::sql::DataType::SQLNULL);
  }
}

namespace {

Value integer_value(::sql::ResultSet& rs, unsigned i, bool is_signed) {
  if (is_signed) return static_cast<std::int64_t>(rs.getInt64(i));
  const std::uint64_t u = rs.getUInt64(i);
  if (u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(u);
  return std::to_string(u);
}

Value column_value(::sql::ResultSet& rs, unsigned i, int type, bool is_signed) {
  if (rs.isNull(i)) return std::monostate{};
  switch (type) {
    case ::sql::DataType::BIT:
    case ::sql::DataType::TINYINT:
    case ::sql::DataType::SMALLINT:
    case ::sql::DataType::MEDIUMINT:
    case ::sql::DataType::INTEGER:
    case ::sql::DataType::BIGINT:
    case ::sql::DataType::YEAR:
      return integer_value(rs, i, is_signed);
    case ::sql::DataType::REAL:
    case ::sql::DataType::DOUBLE:
      return static_cast<double>(rs.getDouble(i));
    default:  // DECIMAL (exact, as text like PostgreSQL's numeric), strings, binary, dates
      return std::string(rs.getString(i).asStdString());
  }
}

}  // namespace

std::vector<std::vector<Value>> fetch_values(::sql::ResultSet& rs) {
  ::sql::ResultSetMetaData* meta = rs.getMetaData();  // owned by the result set
  const unsigned n = meta->getColumnCount();
  std::vector<int> types(n + 1);
  std::vector<bool> is_signed(n + 1);
  for (unsigned i = 1; i <= n; ++i) {
    types[i] = meta->getColumnType(i);
    is_signed[i] = meta->isSigned(i);
  }
  std::vector<std::vector<Value>> rows;
  while (rs.next()) {
    std::vector<Value> row;
    row.reserve(n);
    for (unsigned i = 1; i <= n; ++i) row.push_back(column_value(rs, i, types[i], is_signed[i]));
    rows.push_back(std::move(row));
  }
  return rows;
}

Rows fetch_all(::sql::ResultSet& rs) {
  ::sql::ResultSetMetaData* meta = rs.getMetaData();  // owned by the result set
  auto names = std::make_shared<std::vector<std::string>>();
  for (unsigned i = 1; i <= meta->getColumnCount(); ++i) names->push_back(meta->getColumnLabel(i).asStdString());
  Rows rows;
  for (std::vector<Value>& values : fetch_values(rs)) rows.emplace_back(names, std::move(values));
  return rows;
}

// ---- Context ----

namespace {

}  // namespace

Context::Context(Options options)
    : options_(checked(options)),
      registry_(sql::kAll, tables(options_.table_prefix), dblock::sql::ParamStyle::kQuestion),
      lock_bounded_([this] {
        std::vector<bool> out;
        for (std::size_t i = 0; i < registry_.size(); ++i) {
          out.push_back(std::any_of(std::begin(sql::kLockBounded), std::end(sql::kLockBounded),
                                    [&](const auto* s) { return s == &registry_.at(i); }));
        }
        return out;
      }()),
      connect_options_(connect_options(options_)),
      connections_({kServiceName, [this] { return connect(); }, [](Connection& c) { return c.conn != nullptr; },
                    [](Connection& c, const std::exception& e) { return is_broken(c, e); },
                    [](const char* what) { rethrow_translated(what); }, kConflictAttempts}) {
  connections_.pool().put(connect());  // fail at open(), not at first use
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// OPT_CONNECT_TIMEOUT for a connect that must end by `deadline`: whole seconds, rounded down so
// that it ends by the deadline, at least 1 (the least libmariadb takes), at most `configured`.
int connect_seconds_within(SteadyClock::time_point deadline, int configured) {
  const auto left = std::chrono::floor<std::chrono::seconds>(deadline - SteadyClock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 1, std::max(configured, 1)));
}

[[noreturn]] void connect_deadline_passed(const char* while_what) {
  throw ConnectionError(std::string("mysql: connect: the call's deadline passed ") + while_what, kServiceName, "08S01");
}

}  // namespace

void Context::open_socket(Connection& c, const Options::Endpoint& at, TimePoint deadline) const {
  // A connect outside a call (session locks without a deadline) is given its configured timeout.
  if (deadline == SteadyClock::time_point::max()) {
    deadline = SteadyClock::now() + std::chrono::seconds(std::max(options_.connect_timeout_s, 1));
  }
  // libmariadb's least connect timeout is a second: with less left, a connect could overrun.
  if (deadline - SteadyClock::now() < std::chrono::seconds(1)) {
    connect_deadline_passed("(or is less than a second away) before a connection was made");
  }
  ::sql::ConnectOptionsMap options = connect_options_;
  options["OPT_CONNECT_TIMEOUT"] = connect_seconds_within(deadline, options_.connect_timeout_s);
  dblock::service::SocketPeer peer;
  if (options_.socket.empty()) {
    options["hostName"] = ::sql::SQLString(at.host);
    options["port"] = at.port;
    peer.tcp_port = at.port;
  } else {
    peer.unix_path = options_.socket;
  }
  // This process's connects one at a time, so that they never make each other's sockets
  // ambiguous; each holds its turn for at most its connect timeout, and none waits for it past
  // its own deadline. (A flag under a mutex rather than std::timed_mutex, whose clock-based wait
  // ThreadSanitizer does not follow.)
  static std::mutex mutex;
  static std::condition_variable turn_free;
  static bool connecting = false;  // GUARDED_BY(mutex)
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!turn_free.wait_until(lock, deadline, [] { return !connecting; })) {
      connect_deadline_passed("while another connect to the server was under way");
    }
    connecting = true;
  }
  struct EndTurn {
    ~EndTurn() {
      {
        const std::lock_guard<std::mutex> lock(mutex);
        connecting = false;
      }
      turn_free.notify_one();
    }
  } end_turn;
  c.socket = dblock::service::socket_opened_by([&] { c.conn.reset(driver()->connect(options)); }, peer);
}

std::unique_ptr<Connection> Context::connect(TimePoint deadline) const {
  if (options_.more_hosts.empty()) return connect_to({options_.host, options_.port}, deadline);
  // A list: the first server that can be reached and is writable. Only ConnectionError moves on
  // (unreachable, read-only, too many connections); anything else (credentials, not MariaDB)
  // would fail on every host alike.
  std::vector<Options::Endpoint> endpoints{{options_.host, options_.port}};
  endpoints.insert(endpoints.end(), options_.more_hosts.begin(), options_.more_hosts.end());
  std::string failures;
  for (const Options::Endpoint& at : endpoints) {
    try {
      return connect_to(at, deadline);
    } catch (const ConnectionError& e) {
      failures += (failures.empty() ? "" : "; ") + at.host + ":" + std::to_string(at.port) + ": " + e.what();
    }
  }
  throw ConnectionError("mysql: no writable server among the URL's " + std::to_string(endpoints.size()) +
                            " hosts (" + failures + ")",
                        kServiceName, "08S01");
}

std::unique_ptr<Connection> Context::connect_to(const Options::Endpoint& at, TimePoint deadline) const {
  auto c = std::make_unique<Connection>();
  c->prepared.resize(registry_.size());
  try {
    open_socket(*c, at, deadline);
  } catch (...) {
    rethrow_translated("connect");
  }
  within_deadline(*c, "connect", deadline, [&] {
    try {
      c->plain.reset(c->conn->createStatement());
      std::unique_ptr<::sql::ResultSet> rs(c->plain->executeQuery(sql::kHello.text));
      const Rows rows = fetch_all(*rs);
      const Row& row = rows.at(0);
      const std::string version = row.get<std::string>("version");
      c->id = row.get<std::int64_t>("connection_id");
      int major = 0, minor = 0;
      std::sscanf(version.c_str(), "%d.%d", &major, &minor);
      if (version.find("MariaDB") == std::string::npos || major < 10 || (major == 10 && minor < 6)) {
        throw UnsupportedError("mysql: the server is " + version +
                                   "; this backend needs MariaDB >= 10.6 (it relies on INSERT/DELETE ... RETURNING, "
                                   "prepared compound statements and SKIP LOCKED)",
                               kServiceName);
      }
      if (row.get<bool>("is_read_only")) {
        throw ConnectionError("mysql: the server is read-only (a replica?); dblock acquires only on the primary",
                              kServiceName);
      }
      c->plain->execute(sql::kSessionSetup.text);
    } catch (...) {
      rethrow_translated("connect");
    }
  });
  floor_fences(*c, deadline);
  return c;
}

void Context::floor_fences(Connection& c, TimePoint deadline) const {
  // Not migrated yet (no table, no sequence): this server issued no fence under these tables. An
  // account without INSERT on the sequence (monitoring) cannot move it; every account that
  // acquires has it (README, "Least privilege"), and its own connections floor it.
  constexpr int kNoSuchTable = 1146, kUnknownSequence = 4091, kCommandDenied = 1142;
  try {
    query(c, sql::kFloorFences, {{"carried", carried_.highest()}}, deadline);
  } catch (const ::sql::SQLException& e) {
    const int code = e.getErrorCode();
    if (code != kNoSuchTable && code != kUnknownSequence && code != kCommandDenied) rethrow_translated("connect");
  } catch (...) {
    rethrow_translated("connect");
  }
}

void Context::within_deadline(Connection& c, const char* what, TimePoint deadline,
                              const std::function<void()>& call) const {
  dblock::service::call_within(deadlines_, c.socket, deadline, {kServiceName, what, "08S01"}, call);
}

void Context::run_statement(Connection& c, const dblock::sql::Statement& statement, TimePoint deadline,
                            const std::function<void()>& call) const {
  if (!lock_bounded_[registry_.index(statement)]) return within_deadline(c, statement.name, deadline, call);
  within_deadline(c, statement.name, deadline, [&] {
    try {
      call();
    } catch (const ::sql::SQLException& e) {
      // Room for another full wait and its round trip: the 1205 stays retryable as it is.
      constexpr auto kRoom = std::chrono::seconds(sql::kLockWaitBoundSeconds) + std::chrono::milliseconds(500);
      if (e.getErrorCode() != kErrLockWaitTimeout || deadline - SteadyClock::now() >= kRoom) throw;
      throw TimeoutError(std::string("mysql: ") + statement.name +
                             ": lock wait: another transaction holds a lock on a row of dblock's tables, and the call's "
                             "deadline leaves no time to wait for it again (each wait ends after " +
                             std::to_string(sql::kLockWaitBoundSeconds) +
                             " s on the server; see information_schema.INNODB_TRX for the transaction) (error 1205)",
                         kServiceName, std::to_string(kErrLockWaitTimeout));
    }
  });
}

::sql::PreparedStatement& Context::bound(Connection& c, const dblock::sql::Statement& statement,
                                         const Args& args) const {
  const std::size_t index = registry_.index(statement);
  auto& slot = c.prepared[index];
  if (!slot) {
    const std::string& text = registry_.text(index);
    slot.reset(c.conn->prepareStatement(::sql::SQLString(lock_bounded_[index] ? sql::kLockWaitBound + text : text)));
  }
  const std::vector<const dblock::sql::ArgValue*> ordered = args.in_order(registry_.params(index), statement.name);
  for (std::size_t i = 0; i < ordered.size(); ++i) bind_arg(*slot, static_cast<unsigned>(i + 1), *ordered[i]);
  return *slot;
}

Rows Context::query(Connection& c, const dblock::sql::Statement& statement, const Args& args,
                    TimePoint deadline) const {
  Rows rows;
  run_statement(c, statement, deadline, [&] {
    ::sql::PreparedStatement& ps = bound(c, statement, args);
    std::unique_ptr<::sql::ResultSet> rs(ps.executeQuery());
    rows = fetch_all(*rs);
    rs.reset();
    drain(ps);
  });
  return rows;
}

std::int64_t Context::update(Connection& c, const dblock::sql::Statement& statement, const Args& args) const {
  std::int64_t n = 0;
  run_statement(c, statement, call_deadline(), [&] {
    ::sql::PreparedStatement& ps = bound(c, statement, args);
    n = ps.executeUpdate();
    drain(ps);
  });
  return n;
}

::sql::PreparedStatement& Context::app_statement(Connection& c, std::string_view text) const {
  for (auto it = c.app.begin(); it != c.app.end(); ++it) {
    if (it->first == text) {
      if (it != c.app.begin()) c.app.splice(c.app.begin(), c.app, it);
      return *c.app.front().second;
    }
  }
  std::unique_ptr<::sql::PreparedStatement> ps(c.conn->prepareStatement(::sql::SQLString(std::string(text))));
  c.app.emplace_front(std::string(text), std::move(ps));
  if (c.app.size() > kAppStatementCache) c.app.pop_back();
  return *c.app.front().second;
}

}  // namespace dblock::mysql
