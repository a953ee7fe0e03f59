// PostgreSQL connections that are made by a deadline. Internal.
//
// libpq's blocking connect bounds each host by connect_timeout, counted in whole seconds and at
// least 2, so a connect made with less than that left overran its call's deadline by up to two
// seconds. Here the connect is libpq's non-blocking one (PQconnectStart, PQconnectPoll), its
// socket polled until the deadline; the name lookup inside it is not bounded (hostaddr avoids it).
// Hosts listed in the string are tried in order, one at a time: each address gets connect_timeout
// (as libpq reads it: none when 0 or absent, 1 taken as 2) within the deadline, and a host that
// fails in any way (refused, no answer in time, login rejected, target_session_attrs not met)
// passes to the next; libpq itself stops at a rejected login. Hosts that come from the
// environment or a service file, and target_session_attrs=prefer-standby, are left to libpq's own
// loop, all within the one deadline.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_BOUNDED_CONNECT_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_BOUNDED_CONNECT_H_

#include <pqxx/pqxx>

#include <chrono>
#include <memory>
#include <string>

namespace dblock::postgresql {

// The libpqxx connection policy behind BoundedConnection. Its limits are the ones given to
// connect_until on the constructing thread (a BoundedConnection made otherwise has none).
class BoundedConnect : public pqxx::connectionpolicy {
 public:
  explicit BoundedConnect(const std::string& conninfo);
  handle do_startconnect(handle orig) override;
  // Not ready at construction: connect_until finishes libpqxx's set-up once the object exists,
  // so that a failure there frees the connection.
  bool is_ready(handle) const noexcept override;

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::seconds per_host_cap_;
};

using BoundedConnection = pqxx::basic_connection_base<BoundedConnect>;

// Connects with `conninfo` (a libpq connection string or URI) by `deadline` (steady clock;
// time_point::max(): connect_timeout alone bounds each address). `per_host_cap`, when positive,
// caps each address's time below connect_timeout. Reconnection is off. Throws ConnectionError
// naming the deadline when it passes first, a retryable ConnectionError (SQLSTATE 53300 or 57P03)
// when a host refused for lack of connections or while starting up and none connected,
// pqxx::broken_connection when every host failed otherwise (with
// each host's error) or the string is malformed (without repeating it), std::bad_alloc, and what
// libpqxx's set-up throws (pqxx::failure).
std::unique_ptr<BoundedConnection> connect_until(const std::string& conninfo,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 std::chrono::seconds per_host_cap = std::chrono::seconds(0));

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_BOUNDED_CONNECT_H_
