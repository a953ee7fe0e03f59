#include "session_locks.h"

#include "dblock/errors.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::mysql {

namespace {

using dblock::sql::as_int;
using dblock::sql::is_null;

class MySessionLock final : public SessionLockHandle {
 public:
  MySessionLock(MySessionLocks& locks, std::unique_ptr<Connection> c, std::string key)
      : locks_(locks), c_(std::move(c)), key_(std::move(key)) {}
  // Not released explicitly: closing the connection makes the server drop every lock of the
  // session, which is the most reliable release there is.
  ~MySessionLock() override = default;

  bool verify() noexcept override {
    if (!c_) return false;
    try {
      Rows rows = locks_.context().query(*c_, sql::kSessionVerify, {{"key", key_}});
      return !rows.empty() && rows.front().get<bool>("held") && rows.front().get<std::int64_t>("connection_id") == c_->id;
    } catch (...) {
      return false;
    }
  }

  bool release() override {
    if (!c_) return false;
    try {
      Rows rows = locks_.context().query(*c_, sql::kSessionUnlock, {{"key", key_}});
      // 1: released; 0: held by another session; NULL: nobody held it. Both of the latter mean this
      // session had lost it.
      const Row& row = rows.at(0);
      return locks_.finish_release(c_, row.get<bool>("released"), row.get<std::int64_t>("connection_id") == c_->id);
    } catch (const std::exception& e) {
      const bool broken = is_connection_failure(e);
      c_.reset();
      if (broken) throw InDoubtError(std::string("mysql: session lock release in doubt: ") + e.what(), kServiceName);
      rethrow_translated("session unlock");
    }
  }

  std::int64_t key() const override { return 0; }

 private:
  MySessionLocks& locks_;
  std::unique_ptr<Connection> c_;  // null once released
  const std::string key_;
};

}  // namespace

std::unique_ptr<SessionLockHandle> MySessionLocks::acquire_session_lock(std::string_view name, LockMode mode,
                                                                        std::chrono::milliseconds wait) {
  check_name(name);
  if (mode == LockMode::kShared) {
    throw UnsupportedError(
        "mysql: shared session locks do not exist in MySQL/MariaDB (GET_LOCK is exclusive); use a shared lease",
        kServiceName);
  }
  std::unique_ptr<Connection> c = take_idle();
  if (!c) c = context_.connect();
  std::string key = lock_key(context_.options().database, name);
  Rows rows;
  try {
    rows = context_.query(*c, sql::kSessionLock, {{"key", key}, {"timeout_s", lock_seconds(wait)}});
  } catch (...) {
    c.reset();  // state unknown: the lock may be held by this session; closing frees it
    rethrow_translated("session lock");
  }
  const Row& row = rows.at(0);
  if (row.get<std::int64_t>("connection_id") != c->id) {
    throw ConnectionError("mysql: the connection changed underneath a session lock (a silent reconnect?)",
                          kServiceName);
  }
  if (row.is_null("got")) throw Error("mysql: GET_LOCK failed for '" + std::string(name) + "'", kServiceName);
  if (!row.get<bool>("got")) {
    give_back(std::move(c));
    return nullptr;
  }
  return std::make_unique<MySessionLock>(*this, std::move(c), std::move(key));
}

}  // namespace dblock::mysql
