// What a SQL service's session locks share: one dedicated connection per held lock, kept for
// reuse after a clean release.
//
// Thread-safe. Context: the service's context (connect(), options()); Connection: its connection.
#ifndef DBLOCK_SERVICE_SQL_SESSION_CONNECTIONS_H_
#define DBLOCK_SERVICE_SQL_SESSION_CONNECTIONS_H_

#include <memory>

#include "dblock/service/capabilities.h"
#include "dblock/service/pool.h"

namespace dblock::sql {

template <class Context, class Connection>
class SessionConnections : public SessionLocks {
 public:
  explicit SessionConnections(Context& context)
      : context_(context), idle_([&context] { return context.connect(); }, [](Connection&) { return true; }) {}

  Context& context() { return context_; }
  // A released lock's connection, clean again: kept for the next session lock.
  void give_back(std::unique_ptr<Connection> c) { idle_.put(std::move(c)); }

  // The end of a release that the server answered: the connection goes back for reuse when the
  // lock was released on the session it was taken on, and is closed otherwise (something is off
  // with that session: never reuse it). Returns whether the release counts.
  bool finish_release(std::unique_ptr<Connection>& c, bool released, bool same_session) {
    if (released && same_session) {
      give_back(std::move(c));
      return true;
    }
    c.reset();
    return false;
  }

 protected:
  // An idle session connection, or nullptr when none is idle.
  std::unique_ptr<Connection> take_idle() { return idle_.take(); }

  Context& context_;

 private:
  service::Pool<Connection> idle_;
};

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_SESSION_CONNECTIONS_H_
