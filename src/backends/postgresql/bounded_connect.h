// PostgreSQL connections that are made by a deadline. Internal.
//
// libpq's blocking connect bounds each host by connect_timeout, counted in whole seconds and at
// least 2, so a connect made with less than that left overran its call's deadline by up to two
// seconds. Here the connect is libpq's non-blocking one (PQconnectStartParams, PQconnectPoll),
// its socket polled until the deadline. Hosts are tried in order, as libpq does: each gets
// connect_timeout (as libpq reads it: none when 0 or absent, 1 taken as 2) within the deadline,
// and a host that does not answer in that time, or refuses, or fails target_session_attrs,
// passes to the next.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_BOUNDED_CONNECT_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_BOUNDED_CONNECT_H_

#include <pqxx/pqxx>

#include <chrono>
#include <memory>
#include <string>

namespace dblock::postgresql {

// The libpqxx connection policy behind BoundedConnection. Its deadline is the one given to
// connect_until on the constructing thread.
class BoundedConnect : public pqxx::connectionpolicy {
 public:
  explicit BoundedConnect(const std::string& conninfo);
  handle do_startconnect(handle orig) override;

 private:
  std::chrono::steady_clock::time_point deadline_;
};

using BoundedConnection = pqxx::basic_connection_base<BoundedConnect>;

// Connects with `conninfo` (a libpq connection string or URI) by `deadline` (steady clock;
// time_point::max(): connect_timeout alone bounds each host). Reconnection is off. Throws
// ConnectionError naming the deadline when it passes first, pqxx::broken_connection when every
// host failed (with each host's error).
std::unique_ptr<BoundedConnection> connect_until(const std::string& conninfo,
                                                 std::chrono::steady_clock::time_point deadline);

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_BOUNDED_CONNECT_H_
