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

// libpqxx 6 marks inhibit_reactivation deprecated (7.x removed reactivation altogether); on 6 it
// is the only way to turn the silent reconnect off.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dblock::postgresql {

namespace {

using SteadyClock = std::chrono::steady_clock;

// The deadline connect_until hands to the policy its connection constructs on this thread.
thread_local SteadyClock::time_point t_deadline = SteadyClock::time_point::max();

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

// A connection string taken apart: the host, hostaddr and port lists, one entry per host, and
// every other keyword as given.
struct Conninfo {
  std::vector<std::string> keys, values;
  std::vector<std::string> hosts, hostaddrs, ports;
  std::chrono::seconds per_host{0};  // connect_timeout; 0: none

  // How many hosts to try one by one; 1 when the lists disagree (libpq then reports it).
  std::size_t attempts() const {
    const std::size_t n = std::max({hosts.size(), hostaddrs.size(), std::size_t{1}});
    const bool agree = (hosts.empty() || hosts.size() == n) && (hostaddrs.empty() || hostaddrs.size() == n) &&
                       (ports.size() <= 1 || ports.size() == n);
    return agree ? n : 1;
  }
};

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ",") + s;
  return out;
}

Conninfo parse(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (options == nullptr) {
    const std::string message = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    throw pqxx::broken_connection(message);
  }
  Conninfo info;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view key = o->keyword;
    if (key == "host") {
      info.hosts = split_commas(o->val);
    } else if (key == "hostaddr") {
      info.hostaddrs = split_commas(o->val);
    } else if (key == "port") {
      info.ports = split_commas(o->val);
    } else {
      if (key == "connect_timeout") {
        // As libpq reads it: not positive is none, 1 is taken as 2.
        info.per_host = std::chrono::seconds(std::max(0L, std::strtol(o->val, nullptr, 10)));
        if (info.per_host == std::chrono::seconds(1)) info.per_host = std::chrono::seconds(2);
      }
      info.keys.emplace_back(key);
      info.values.emplace_back(o->val);
    }
  }
  PQconninfoFree(options);
  return info;
}

// Waits until `fd` is ready for `events` or `until` passes (false).
bool wait_socket(int fd, short events, SteadyClock::time_point until) {
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

std::string trimmed(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// One host (the i-th of `info`) until `until`: the connection, or null with `error` set.
PGconn* connect_host(const Conninfo& info, std::size_t i, bool one_by_one, SteadyClock::time_point until,
                     std::string& error) {
  std::vector<std::string> keys = info.keys, values = info.values;
  auto add = [&](const char* key, const std::vector<std::string>& list, std::size_t at) {
    if (list.empty()) return;
    keys.emplace_back(key);
    values.push_back(!one_by_one ? joined(list) : list.size() == 1 ? list[0] : list[at]);
  };
  add("host", info.hosts, i);
  add("hostaddr", info.hostaddrs, i);
  add("port", info.ports, i);
  std::vector<const char*> k, v;
  for (std::size_t j = 0; j < keys.size(); ++j) k.push_back(keys[j].c_str()), v.push_back(values[j].c_str());
  k.push_back(nullptr), v.push_back(nullptr);

  PGconn* c = PQconnectStartParams(k.data(), v.data(), 0);
  if (c == nullptr) throw std::bad_alloc();
  PostgresPollingStatusType status = PQstatus(c) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED) {
      error = trimmed(PQerrorMessage(c));
      PQfinish(c);
      return nullptr;
    }
    if (!wait_socket(PQsocket(c), status == PGRES_POLLING_READING ? POLLIN : POLLOUT, until)) {
      error = "no answer in time" + (info.hosts.size() > i ? " from " + info.hosts[i] : std::string());
      PQfinish(c);
      return nullptr;
    }
    status = PQconnectPoll(c);
  }
  return c;
}

}  // namespace

BoundedConnect::BoundedConnect(const std::string& conninfo)
    : pqxx::connectionpolicy(conninfo), deadline_(t_deadline) {}

pqxx::connectionpolicy::handle BoundedConnect::do_startconnect(handle orig) {
  if (orig != nullptr) return orig;
  const Conninfo info = parse(options());
  const std::size_t attempts = info.attempts();
  std::string errors;
  for (std::size_t i = 0; i < attempts && SteadyClock::now() < deadline_; ++i) {
    SteadyClock::time_point until = deadline_;
    if (info.per_host.count() > 0) until = std::min(until, SteadyClock::now() + info.per_host);
    std::string error;
    if (PGconn* c = connect_host(info, i, attempts > 1, until, error)) return c;
    errors += (errors.empty() ? "" : "; ") + error;
  }
  if (SteadyClock::now() < deadline_) throw pqxx::broken_connection(errors);
  throw ConnectionError("postgresql: connect: no connection before the call's deadline" +
                            (errors.empty() ? std::string() : " (" + errors + ")"),
                        "postgresql", "08006");
}

std::unique_ptr<BoundedConnection> connect_until(const std::string& conninfo, SteadyClock::time_point deadline) {
  struct OnThisThread {
    explicit OnThisThread(SteadyClock::time_point d) : previous(t_deadline) { t_deadline = d; }
    ~OnThisThread() { t_deadline = previous; }
    SteadyClock::time_point previous;
  } scope(deadline);
  auto c = std::make_unique<BoundedConnection>(conninfo);
  c->inhibit_reactivation(true);
  return c;
}

}  // namespace dblock::postgresql
