#include "session_locks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "dblock/errors.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::postgresql {

namespace {

class PgSessionLock final : public SessionLockHandle {
 public:
  PgSessionLock(PgSessionLocks& locks, std::unique_ptr<Connection> c, std::int64_t key, LockMode mode)
      : locks_(locks), c_(std::move(c)), key_(key), mode_(mode) {}
  // Not released explicitly: closing the connection makes the server drop every lock of the
  // session, which is the most reliable release there is.
  ~PgSessionLock() override = default;

  bool verify() noexcept override {
    if (!c_) return false;
    try {
      const char* mode = mode_ == LockMode::kExclusive ? "ExclusiveLock" : "ShareLock";
      return locks_.context().exec(*c_, sql::kVerifySession, {{"key", key_}, {"mode", mode}}).at(0).get<bool>("held");
    } catch (...) {
      return false;
    }
  }

  bool release() override {
    if (!c_) return false;
    try {
      const auto& statement = mode_ == LockMode::kExclusive ? sql::kUnlockSessionExclusive : sql::kUnlockSessionShared;
      const dblock::sql::Rows r = locks_.context().exec(*c_, statement, {{"key", key_}, {"pid", c_->backend_pid}});
      const dblock::sql::Row& row = r.at(0);
      // NULL: not on the lock's session.
      return locks_.finish_release(c_, row.get<bool>("released"), row.get<int>("pid") == c_->backend_pid);
    } catch (const pqxx::broken_connection& e) {
      c_.reset();
      throw InDoubtError(std::string("postgresql: session lock release in doubt: ") + e.what(), kServiceName);
    } catch (...) {
      c_.reset();
      rethrow_translated("session unlock");
    }
  }

  std::int64_t key() const override { return key_; }

 private:
  PgSessionLocks& locks_;
  std::unique_ptr<Connection> c_;  // null once released
  const std::int64_t key_;
  const LockMode mode_;
};

// Whether the lock was granted; throws UsageError when the server session changed (a pooler).
bool take(Context& context, Connection& c, std::int64_t key, LockMode mode, std::chrono::milliseconds wait) {
  const bool exclusive = mode == LockMode::kExclusive;
  dblock::sql::Args args{{"key", key}, {"pid", c.backend_pid}};
  int pid;
  bool granted;
  if (wait <= std::chrono::milliseconds::zero()) {
    const dblock::sql::Rows r = context.exec(c, exclusive ? sql::kTrySessionExclusive : sql::kTrySessionShared, args);
    pid = r.at(0).get<int>("pid");
    granted = r.at(0).get<bool>("got");  // NULL: not on c's session
  } else {
    // lock_timeout is a session setting on this dedicated connection; '0' waits forever.
    args.add({"lock_timeout", lock_timeout_text(wait)});
    const dblock::sql::Rows r = context.exec(c, exclusive ? sql::kWaitSessionExclusive : sql::kWaitSessionShared, args);
    pid = r.at(0).get<int>("pid");
    granted = r.at(0).get<bool>("on_session");
  }
  // The server session changed under us: a transaction pooler. The lock (if any) sits on a server
  // session we no longer control; close ours and refuse loudly.
  if (pid != c.backend_pid) throw UsageError(pooler_message(), kServiceName);
  return granted;
}

}  // namespace

std::string pooler_message() {
  return "postgresql: this URL goes through a proxy or connection pooler (the server does not see this "
         "client's socket, or the server session changed between statements). Behind a transaction "
         "pooler (e.g. pgbouncer pool_mode=transaction) a session lock would be lost silently, so "
         "session locks are refused; connect them directly to PostgreSQL, or use leases, which work "
         "through poolers. For a trusted session-mode pool or a NAT, add detect_pooler=0 to the URL.";
}

std::unique_ptr<SessionLockHandle> PgSessionLocks::acquire_session_lock(std::string_view name, LockMode mode,
                                                                        std::chrono::milliseconds wait) {
  std::unique_ptr<Connection> c = session_connection();
  const std::int64_t key = advisory_key(name);
  try {
    if (!take(context_, *c, key, mode, wait)) {
      give_back(std::move(c));
      return nullptr;
    }
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "55P03") {  // lock_timeout: not acquired within wait
      give_back(std::move(c));
      return nullptr;
    }
    rethrow_translated("session lock");
  } catch (const UsageError&) {
    throw;
  } catch (...) {
    rethrow_translated("session lock");
  }
  return std::make_unique<PgSessionLock>(*this, std::move(c), key, mode);
}

std::unique_ptr<Connection> PgSessionLocks::session_connection() {
  if (std::unique_ptr<Connection> c = take_idle()) return c;
  auto c = context_.connect();
  if (context_.options().detect_pooler) probe_pooler(*c);
  return c;
}

// Under transaction pooling a server session is lent out per transaction. While a second client
// connection keeps a transaction open (and so keeps the server session our last statement used,
// the pooler's most recently freed one), our next statement must run on a different server
// session: the backend pid changes. Directly connected, or through a session-mode pool, it cannot.
void PgSessionLocks::probe_pooler(Connection& c) {
  // First, deterministically: the server must see this very socket. Any proxy in between (a
  // pooler, in any mode) shows up as a different client port, or as a TCP client where we are on
  // a Unix socket and vice versa. (A NAT that rewrites ports looks the same; detect_pooler=0 turns
  // the check off for such trusted paths.) The pid probe below remains as a second check.
  try {
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    const int fd = c.conn->sock();
    if (fd >= 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      int local_port = -1;  // -1: a Unix socket
      if (local.ss_family == AF_INET) local_port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
      if (local.ss_family == AF_INET6) local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
      const auto watch = context_.watch(c);
      pqxx::nontransaction tx(*c.conn);
      const dblock::sql::Row seen = context_.exec(tx, sql::kClientPort).at(0);
      const int server_port = seen.is_null("port") ? -1 : seen.get<int>("port");
      if (server_port != local_port) throw UsageError(pooler_message(), kServiceName);
    }
  } catch (const UsageError&) {
    throw;
  } catch (...) {
    rethrow_translated("pooler probe");
  }
  try {
    const auto other = connect_until(context_.options().conninfo, call_deadline());
    const auto watch_other = context_.watch(*other);
    const auto watch_ours = context_.watch(c);
    pqxx::work hold(*other);
    context_.exec(hold, sql::kShortIdleTimeout);
    context_.exec(hold, sql::kBackendPid);
    pqxx::nontransaction tx(*c.conn);
    const int pid = context_.exec(tx, sql::kBackendPid).at(0).get<int>("pid");
    hold.abort();
    if (pid != c.backend_pid) throw UsageError(pooler_message(), kServiceName);
  } catch (const UsageError&) {
    throw;
  } catch (...) {
    rethrow_translated("pooler probe");
  }
}

}  // namespace dblock::postgresql
