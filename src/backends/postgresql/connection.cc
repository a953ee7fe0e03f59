#include "connection.h"

#include <vector>

#include "dblock/errors.h"
#include "error_map.h"
#include "internal.h"
#include "sql.h"

// libpqxx 6 marks inhibit_reactivation deprecated (7.x removed reactivation altogether); on 6 it
// is the only way to turn the silent reconnect off.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dblock::postgresql {

dblock::sql::Placeholders tables(const std::string& prefix) {
  dblock::sql::Placeholders p = dblock::sql::lease_tables(prefix, &detail::quote_identifier);
  p.set('S', "'" + detail::quote_identifier(prefix + "fence_seq") + "'");
  return p;
}

namespace {

std::vector<const dblock::sql::Statement*> all_statements() {
  std::vector<const dblock::sql::Statement*> all(std::begin(sql::kPrepared), std::end(sql::kPrepared));
  all.insert(all.end(), std::begin(sql::kAdHoc), std::end(sql::kAdHoc));
  return all;
}

const Options& checked(const Options& options) {
  detail::validate_table_prefix(options.table_prefix);
  if (options.conninfo.empty()) throw UsageError("postgresql: empty connection string", kServiceName);
  return options;
}

}  // namespace

Value to_value(const pqxx::field& f) {
  if (f.is_null()) return std::monostate{};
  switch (f.type()) {
    case 20: case 21: case 23: return f.as<std::int64_t>();  // int8, int2, int4
    case 700: case 701: return f.as<double>();               // float4, float8
    case 16: return std::int64_t{f.as<bool>() ? 1 : 0};      // bool
    default: return f.as<std::string>();
  }
}

std::vector<std::vector<Value>> rows_of(const pqxx::result& r) {
  std::vector<std::vector<Value>> rows;
  rows.reserve(r.size());
  for (const auto& row : r) {
    std::vector<Value> out;
    for (const auto& f : row) out.push_back(to_value(f));
    rows.push_back(std::move(out));
  }
  return rows;
}

bool broken(Connection& c, const std::exception& e) noexcept {
  // A ConnectionError of ours: the call's deadline shut the socket down.
  return is_connection_failure(e) || dynamic_cast<const ConnectionError*>(&e) != nullptr || !c.conn ||
         !c.conn->is_open();
}

Context::Context(Options options)
    : options_(checked(options)),
      registry_(all_statements(), tables(options_.table_prefix)),
      connections_({kServiceName, [this] { return connect(); },
                    [](Connection& c) { return c.conn && c.conn->is_open(); },
                    [](Connection& c, const std::exception& e) { return broken(c, e); },
                    [](const char* what) { rethrow_translated(what); }, 1}) {
  connections_.pool().put(connect());  // fail at open(), not at first use
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// The connection string for a connect made now within `deadline`.
std::string conninfo_within(const std::string& conninfo, SteadyClock::time_point deadline) {
  if (deadline == SteadyClock::time_point::max()) return conninfo;
  const auto left = std::chrono::ceil<std::chrono::seconds>(deadline - SteadyClock::now());
  if (left <= std::chrono::seconds::zero()) {
    throw ConnectionError("postgresql: connect: the call's deadline passed before a connection was made", kServiceName,
                          "08006");
  }
  if (left >= std::chrono::seconds(5)) return conninfo;
  // The last of repeated keywords counts; libpq takes values below 2 as 2.
  return conninfo + " connect_timeout=" + std::to_string(left.count());
}

}  // namespace

std::unique_ptr<Connection> Context::connect() const {
  auto c = std::make_unique<Connection>();
  const std::string conninfo = conninfo_within(options_.conninfo, call_deadline());
  try {
    c->conn = std::make_unique<pqxx::connection>(conninfo);
    c->conn->inhibit_reactivation(true);
    pqxx::nontransaction tx(*c->conn);
    pqxx::row hello = tx.exec1(text(sql::kHello));
    if (hello[0].as<bool>()) {
      throw ConnectionError("postgresql: the server is in recovery (a standby); dblock acquires only on the primary",
                            kServiceName);
    }
    c->backend_pid = hello[1].as<int>();
  } catch (...) {
    rethrow_translated("connect");
  }
  for (const dblock::sql::Statement* s : sql::kPrepared) c->conn->prepare(s->name, registry_.text(*s));
  return c;
}

pqxx::result Context::exec(Connection& c, const dblock::sql::Statement& statement, const Params& params) const {
  return dblock::sql::call_within(deadlines_, c.conn->sock(), call_deadline(), {kServiceName, statement.name, "08006"},
                                  [&] {
                                    pqxx::nontransaction tx(*c.conn);
                                    auto ptrs = params.pointers();
                                    auto dynamic = pqxx::prepare::make_dynamic_params(ptrs);
                                    if (options_.prepared) return tx.exec_prepared(statement.name, dynamic);
                                    return tx.exec_params(registry_.text(statement), dynamic);
                                  });
}

}  // namespace dblock::postgresql
