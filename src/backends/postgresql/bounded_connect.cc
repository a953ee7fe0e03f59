#include "bounded_connect.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "dblock/errors.h"
#include "error_map.h"

// libpqxx 6 marks activate and inhibit_reactivation deprecated (7.x removed reactivation
// altogether); on 6 they are the only way to finish a deferred connect and to turn the silent
// reconnect off.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dblock::postgresql {

namespace {

using SteadyClock = std::chrono::steady_clock;
using PgConnPtr = std::unique_ptr<PGconn, decltype(&PQfinish)>;

// What connect_until hands to the policy its connection constructs on this thread.
struct Limits {
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  std::chrono::seconds per_host_cap{0};  // 0: none
};
thread_local Limits t_limits;

// "a,b," is three entries, as libpq counts them ("" is the default).
std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  while (true) {
    const std::size_t comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

// A connection string taken apart: the host, hostaddr and port lists, and every other keyword.
struct Conninfo {
  std::vector<std::pair<std::string, std::string>> others;
  std::vector<std::string> hosts, hostaddrs, ports;
  std::chrono::seconds per_host{0};  // connect_timeout, as libpq reads it; 0: none
  bool prefer_standby = false;       // a preference across hosts: only libpq's own loop keeps it
  std::string session_attrs;         // target_session_attrs, for the error when no host met it

  // How many hosts to try one by one; 1 (libpq's own loop, within one budget) when there is at
  // most one, when the lists disagree (libpq reports it) or under prefer-standby.
  std::size_t attempts() const {
    const std::size_t n = std::max({hosts.size(), hostaddrs.size(), std::size_t{1}});
    const bool agree = (hosts.empty() || hosts.size() == n) && (hostaddrs.empty() || hostaddrs.size() == n) &&
                       (ports.size() <= 1 || ports.size() == n);
    return agree && !prefer_standby ? n : 1;
  }
};

Conninfo parse(const std::string& conninfo) {
  char* raw_error = nullptr;
  const std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(
      PQconninfoParse(conninfo.c_str(), &raw_error), &PQconninfoFree);
  const std::unique_ptr<char, decltype(&PQfreemem)> error(raw_error, &PQfreemem);
  // The parser's message may quote the string it failed on, password and all: not repeated.
  if (!options) throw pqxx::broken_connection(error ? "malformed connection string" : "out of memory");
  Conninfo info;
  for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view key = o->keyword, value = o->val;
    if (key == "host") {
      info.hosts = split_commas(value);
    } else if (key == "hostaddr") {
      info.hostaddrs = split_commas(value);
    } else if (key == "port") {
      info.ports = split_commas(value);
    } else {
      if (key == "connect_timeout") {
        // As libpq reads it: not positive is none, 1 is taken as 2.
        const long seconds = std::clamp(std::strtol(o->val, nullptr, 10), 0L, long{INT_MAX});
        info.per_host = std::chrono::seconds(seconds == 1 ? 2 : seconds);
      }
      if (key == "target_session_attrs") {
        info.prefer_standby = value == "prefer-standby";
        info.session_attrs = value;
      }
      info.others.emplace_back(key, value);
    }
  }
  return info;
}

std::string quoted(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// The connection string for the i-th host alone.
std::string host_conninfo(const Conninfo& info, std::size_t i) {
  std::string out;
  for (const auto& [key, value] : info.others) out += key + "=" + quoted(value) + " ";
  auto add = [&](const char* key, const std::vector<std::string>& list) {
    if (!list.empty()) out += std::string(key) + "=" + quoted(list.size() == 1 ? list[0] : list[i]) + " ";
  };
  add("host", info.hosts);
  add("hostaddr", info.hostaddrs);
  add("port", info.ports);
  return out;
}

// Waits until `fd` is ready for `events` or `until` passes (false).
bool wait_socket(int fd, short events, SteadyClock::time_point until) {
  if (fd < 0) return true;  // PQconnectPoll reports it
  while (true) {
    int timeout_ms = -1;
    if (until != SteadyClock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - SteadyClock::now()).count();
      if (left <= 0) return false;
      timeout_ms = static_cast<int>(std::min<long long>(left, INT_MAX));
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, timeout_ms);
    if (n > 0 || (n < 0 && errno != EINTR)) return true;  // ready, or PQconnectPoll sees the error
  }
}

// A failed connect's message, as libpq wrote it with PQERRORS_VERBOSE (so that a server's refusal
// carries its SQLSTATE: "...failed: FATAL:  53300: sorry, too many clients already\nLOCATION: ..."),
// on one line without the LOCATION lines; `sqlstate` gets the server's SQLSTATE when there is one.
std::string connect_error(const char* message, std::string& sqlstate) {
  std::string kept;
  std::string_view rest = message != nullptr ? message : "";
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (line.rfind("LOCATION:", 0) == 0) continue;
    kept.append(line).append("\n");
  }
  // "<severity>:  XXXXX: ": a server's error, with its five-character SQLSTATE.
  for (std::size_t at = kept.find(":  "); at != std::string::npos; at = kept.find(":  ", at + 1)) {
    const std::string_view code = std::string_view(kept).substr(at + 3, 6);
    if (code.size() == 6 && code[5] == ':' &&
        std::all_of(code.begin(), code.end() - 1, [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); })) {
      sqlstate = std::string(code.substr(0, 5));
      break;
    }
  }
  return one_line(kept);
}

// Polls a started connect to its end. Each address libpq tries gets `per_host` (0: no limit), all
// of them `deadline`. The connection, or null with `error` set.
PGconn* finish_connect(PgConnPtr c, std::chrono::seconds per_host, SteadyClock::time_point deadline,
                       std::string& error, std::string& sqlstate) {
  std::string address;  // the one `until` counts for
  SteadyClock::time_point until = deadline;
  PostgresPollingStatusType status = PQstatus(c.get()) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED) {
      error = connect_error(PQerrorMessage(c.get()), sqlstate);
      return nullptr;
    }
    const std::string now_at = std::string(PQhost(c.get()) ? PQhost(c.get()) : "") + ":" +
                               (PQport(c.get()) ? PQport(c.get()) : "") + "/" +
                               (PQhostaddr(c.get()) ? PQhostaddr(c.get()) : "");
    if (now_at != address) {
      address = now_at;
      until = per_host.count() > 0 ? std::min(deadline, SteadyClock::now() + per_host) : deadline;
    }
    if (!wait_socket(PQsocket(c.get()), status == PGRES_POLLING_READING ? POLLIN : POLLOUT, until)) {
      error = "no answer in time from " + address;
      return nullptr;
    }
    status = PQconnectPoll(c.get());
  }
  PQsetErrorVerbosity(c.get(), PQERRORS_DEFAULT);  // the session's own errors, as libpq words them
  return c.release();
}

PgConnPtr started(const std::string& conninfo) {
  PgConnPtr c(PQconnectStart(conninfo.c_str()), &PQfinish);
  if (!c) throw std::bad_alloc();
  PQsetErrorVerbosity(c.get(), PQERRORS_VERBOSE);  // a refusal's SQLSTATE (connect_error)
  return c;
}

}  // namespace

BoundedConnect::BoundedConnect(const std::string& conninfo)
    : pqxx::connectionpolicy(conninfo), deadline_(t_limits.deadline), per_host_cap_(t_limits.per_host_cap) {}

// libpqxx calls this from its constructor and again from activate(): the second call finds the
// connection made.
pqxx::connectionpolicy::handle BoundedConnect::do_startconnect(handle orig) {
  if (orig != nullptr) return orig;
  const Conninfo info = parse(options());
  std::chrono::seconds per_host = info.per_host;
  if (per_host_cap_.count() > 0) per_host = per_host.count() > 0 ? std::min(per_host, per_host_cap_) : per_host_cap_;
  const std::size_t attempts = info.attempts();
  std::string errors, transient;  // transient: a host's SQLSTATE that says "try again shortly"
  bool unreachable = true;         // every host failed without a server's answer (refused, timed out)
  for (std::size_t i = 0; i < attempts && SteadyClock::now() < deadline_; ++i) {
    // One host: the string as given, so that libpq reads it exactly as it would (empty values,
    // environment defaults).
    PgConnPtr c = started(attempts == 1 ? options() : host_conninfo(info, i));
    std::string error, sqlstate;
    if (PGconn* made = finish_connect(std::move(c), per_host, deadline_, error, sqlstate)) return made;
    errors += (errors.empty() ? "" : "; ") + error;
    if (is_transient_state(sqlstate)) transient = sqlstate;
    if (!sqlstate.empty()) unreachable = false;
  }
  // Which attribute the hosts failed, when one was asked for: libpq's "session is read-only" or
  // "server is in hot standby mode" does not name it.
  if (!info.session_attrs.empty() && info.session_attrs != "any") {
    errors += " (no host met target_session_attrs=" + info.session_attrs + ")";
  }
  // A server starting up, out of connections, or not (yet) reachable at all (no host answered
  // with a SQLSTATE; a standby still to be promoted among them): an open that is part of a wait
  // tries again (dblock::open with a deadline). A server that answered with a refusal (a
  // password, a database) does not change its mind.
  if ((!transient.empty() || (unreachable && !errors.empty())) && SteadyClock::now() < deadline_) {
    throw ConnectionError("postgresql: connect: " + errors, "postgresql", transient.empty() ? "08001" : transient, true);
  }
  if (SteadyClock::now() < deadline_) throw pqxx::broken_connection(errors);
  throw ConnectionError("postgresql: connect: no connection before its deadline" +
                            (errors.empty() ? std::string() : " (" + errors + ")"),
                        "postgresql", "08006");
}

bool BoundedConnect::is_ready(handle) const noexcept { return false; }

std::unique_ptr<BoundedConnection> connect_until(const std::string& conninfo, SteadyClock::time_point deadline,
                                                 std::chrono::seconds per_host_cap) {
  struct OnThisThread {
    explicit OnThisThread(Limits l) : previous(t_limits) { t_limits = l; }
    ~OnThisThread() { t_limits = previous; }
    Limits previous;
  } scope({deadline, per_host_cap});
  auto c = std::make_unique<BoundedConnection>(conninfo);  // connects (init() → do_startconnect)
  // Finishes libpqxx's own set-up; a failure here destroys `c`, which closes the connection.
  c->activate();
  c->inhibit_reactivation(true);
  return c;
}

}  // namespace dblock::postgresql
