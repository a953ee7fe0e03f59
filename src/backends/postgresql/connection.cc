#include "connection.h"

#include <vector>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::postgresql {

dblock::sql::Placeholders tables(const std::string& prefix) {
  dblock::sql::Placeholders p = dblock::sql::lease_tables(prefix, &service::quote_identifier);
  p.set('S', "'" + service::quote_identifier(prefix + "fence_seq") + "'");
  return p;
}

namespace {

std::vector<const dblock::sql::Statement*> all_statements() {
  std::vector<const dblock::sql::Statement*> all(std::begin(sql::kPrepared), std::end(sql::kPrepared));
  all.insert(all.end(), std::begin(sql::kAdHoc), std::end(sql::kAdHoc));
  return all;
}

const Options& checked(const Options& options) {
  service::validate_table_prefix(options.table_prefix);
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

std::vector<std::vector<Value>> values_of(const pqxx::result& r) {
  std::vector<std::vector<Value>> rows;
  rows.reserve(r.size());
  for (const auto& row : r) {
    std::vector<Value> out;
    for (const auto& f : row) out.push_back(to_value(f));
    rows.push_back(std::move(out));
  }
  return rows;
}

dblock::sql::Rows rows_of(const pqxx::result& r) {
  auto names = std::make_shared<std::vector<std::string>>();
  for (pqxx::row::size_type i = 0; i < r.columns(); ++i) names->emplace_back(r.column_name(i));
  dblock::sql::Rows rows;
  rows.reserve(r.size());
  for (std::vector<Value>& values : values_of(r)) rows.emplace_back(names, std::move(values));
  return rows;
}

namespace {

Params in_order(const std::vector<std::string>& params, const dblock::sql::Args& args, const char* name) {
  Params p;
  for (const dblock::sql::ArgValue* v : args.in_order(params, name)) p.add_arg(*v);
  return p;
}

}  // namespace

dblock::sql::Rows exec_text(pqxx::transaction_base& tx, std::string_view text, const dblock::sql::Args& args,
                            const char* name) {
  const dblock::sql::DriverText spelled = dblock::sql::spell_params(text, dblock::sql::ParamStyle::kDollar);
  const Params p = in_order(spelled.params, args, name);
  auto ptrs = p.pointers();
  return rows_of(tx.exec_params(spelled.text, pqxx::prepare::make_dynamic_params(ptrs)));
}

bool broken(Connection& c, const std::exception& e) noexcept {
  // A ConnectionError of ours: the call's deadline shut the socket down.
  return is_connection_failure(e) || dynamic_cast<const ConnectionError*>(&e) != nullptr || !c.conn ||
         !c.conn->is_open();
}

Context::Context(Options options)
    : options_(checked(options)),
      registry_(all_statements(), tables(options_.table_prefix), dblock::sql::ParamStyle::kDollar),
      connections_({kServiceName, [this] { return connect(); },
                    [](Connection& c) { return c.conn && c.conn->is_open(); },
                    [](Connection& c, const std::exception& e) { return broken(c, e); },
                    [](const char* what) { rethrow_translated(what); }, 1}) {
  connections_.pool().put(connect());  // fail at open(), not at first use
}

std::unique_ptr<Connection> Context::connect() const {
  auto c = std::make_unique<Connection>();
  try {
    c->conn = connect_until(options_.conninfo, call_deadline());
    const dblock::sql::Rows rows = dblock::service::call_within(deadlines_, c->conn->sock(), call_deadline(),
                                                            {kServiceName, "connect", "08006"}, [&] {
                                                              pqxx::nontransaction tx(*c->conn);
                                                              return exec(tx, sql::kHello);
                                                            });
    const dblock::sql::Row& hello = rows.at(0);
    if (hello.get<bool>("in_recovery")) {
      throw ConnectionError("postgresql: the server is in recovery (a standby); dblock acquires only on the primary",
                            kServiceName);
    }
    if (hello.get<bool>("read_only")) {
      throw ConnectionError("postgresql: the server's transactions are read-only (default_transaction_read_only); "
                            "dblock acquires only on a writable primary",
                            kServiceName, "25006");
    }
    c->backend_pid = hello.get<int>("pid");
    floor_fences(*c);
  } catch (...) {
    rethrow_translated("connect");
  }
  for (const dblock::sql::Statement* s : sql::kPrepared) c->conn->prepare(s->name, registry_.text(*s));
  return c;
}

void Context::floor_fences(Connection& c) const {
  try {
    dblock::service::call_within(deadlines_, c.conn->sock(), call_deadline(), {kServiceName, "floor_fences", "08006"}, [&] {
      pqxx::nontransaction tx(*c.conn);
      exec(tx, sql::kFloorFences, {{"carried", carried_.highest()}});
    });
  } catch (const pqxx::undefined_table&) {
    // Not migrated yet: this server has issued no fence under these tables.
  } catch (const pqxx::insufficient_privilege&) {
    // A role without UPDATE on the sequence (a monitoring role) cannot move it; every role that
    // acquires has UPDATE (README, "Least privilege"), and its own connections floor it.
  }
}

dblock::sql::Rows Context::exec(Connection& c, const dblock::sql::Statement& statement,
                               const dblock::sql::Args& args) const {
  return dblock::service::call_within(deadlines_, c.conn->sock(), call_deadline(),
                                      {kServiceName, statement.name, "08006"}, [&] {
                                        pqxx::nontransaction tx(*c.conn);
                                        return exec(tx, statement, args);
                                      });
}

dblock::sql::Rows Context::exec(pqxx::transaction_base& tx, const dblock::sql::Statement& statement,
                               const dblock::sql::Args& args) const {
  const std::size_t i = registry_.index(statement);
  const Params p = in_order(registry_.params(i), args, statement.name);
  auto ptrs = p.pointers();
  auto dynamic = pqxx::prepare::make_dynamic_params(ptrs);
  const bool prepared = options_.prepared && i < std::size(sql::kPrepared);  // kPrepared come first
  return rows_of(prepared ? tx.exec_prepared(statement.name, dynamic) : tx.exec_params(registry_.text(i), dynamic));
}

}  // namespace dblock::postgresql
