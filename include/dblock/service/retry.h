// The retry and in-doubt policy every SQL service follows, written once.
//
//  * A statement that failed with a retryable error (deadlock, lock wait timeout: the server
//    rolled it back) is repeated, up to Driver::conflict_attempts tries, after jittered pauses.
//  * A connection that broke is dropped, never reused. A statement that is idempotent for the
//    same owner secret (an acquire re-takes a lease this secret holds, renew, reads, reaping) is
//    retried once on a fresh connection.
//  * A compare-and-delete (release) whose reply was lost is retried once; a retry that finds
//    nothing to release cannot tell "done by the lost attempt" from "not held": InDoubtError.
//  * A statement whose repetition could be mistaken for a conflict (compare-and-set) is not
//    retried after a broken connection: InDoubtError.
//
// Thread-safe as its Pool.
#ifndef DBLOCK_SERVICE_RETRY_H_
#define DBLOCK_SERVICE_RETRY_H_

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "dblock/errors.h"
#include "dblock/service/backoff.h"
#include "dblock/service/pool.h"

namespace dblock::service {

template <class Connection>
class Connections {
 public:
  struct Driver {
    std::string service;                                 // "postgresql", for messages
    typename Pool<Connection>::Connect connect;
    typename Pool<Connection>::Reusable reusable;
    // True when `c` must not be reused after `e` was thrown on it.
    std::function<bool(Connection& c, const std::exception& e)> broken;
    // Rethrows the exception in flight as a dblock::Error (the dialect's error map).
    void (*translate)(const char* what) = nullptr;
    int conflict_attempts = 1;  // tries of a statement that failed with a retryable error
  };

  explicit Connections(Driver driver) : driver_(std::move(driver)), pool_(driver_.connect, driver_.reusable) {}

  Pool<Connection>& pool() { return pool_; }
  const std::string& service() const { return driver_.service; }

  // Runs fn(Connection&) on a pooled connection; errors come out translated, and a connection
  // that broke is dropped.
  template <class Fn>
  auto run(Fn&& fn) -> decltype(fn(std::declval<Connection&>())) {
    auto c = pool_.borrow();
    try {
      return fn(*c);
    } catch (const std::exception& e) {
      if (driver_.broken(*c, e)) c.discard();
      driver_.translate("statement failed");
      throw;  // translate() always throws
    }
  }

  // run(), repeated on conflicts.
  template <class Fn>
  auto run_resolving_conflicts(Fn&& fn) -> decltype(fn(std::declval<Connection&>())) {
    std::chrono::microseconds pause(1'000);
    for (int attempt = 1;; ++attempt) {
      try {
        return run(fn);
      } catch (const ConnectionError&) {
        throw;
      } catch (const Error& e) {
        if (!e.retryable() || attempt >= driver_.conflict_attempts) throw;
      }
      std::this_thread::sleep_for(service::jittered(pause));
      pause *= 4;
    }
  }

  // run_resolving_conflicts(), and once more on a fresh connection after a ConnectionError.
  // REQUIRES: fn is idempotent.
  template <class Fn>
  auto idempotent(Fn&& fn) -> decltype(fn(std::declval<Connection&>())) {
    try {
      return run_resolving_conflicts(fn);
    } catch (const ConnectionError&) {
      return run_resolving_conflicts(fn);
    }
  }

  // A compare-and-delete: fn returns whether the lease it found was live (nullopt: nothing of
  // this owner's found). Throws InDoubtError when a retry after a lost reply finds nothing.
  template <class Fn>
  std::optional<bool> release(Fn&& fn, std::string_view name) {
    try {
      return run_resolving_conflicts(fn);
    } catch (const ConnectionError&) {
    }
    std::optional<bool> again = run_resolving_conflicts(fn);
    if (!again) {
      throw InDoubtError(driver_.service + ": release of '" + std::string(name) +
                             "' is in doubt: the connection broke and the retry found nothing to release",
                         driver_.service);
    }
    return again;
  }

  // run_resolving_conflicts() for a statement that must not be repeated after a lost reply.
  template <class Fn>
  auto once(Fn&& fn, const char* what) -> decltype(fn(std::declval<Connection&>())) {
    try {
      return run_resolving_conflicts(fn);
    } catch (const ConnectionError& e) {
      throw InDoubtError(driver_.service + ": " + what + " in doubt: " + e.what(), driver_.service, e.sqlstate());
    }
  }

 private:
  const Driver driver_;
  Pool<Connection> pool_;
};

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_RETRY_H_
