// dblock/errors.h — the exception tree every dblock call throws from.
//
// Contention is a *result*, never an exception: try_acquire() returns an empty optional, a failed
// compare-and-set returns false. Exceptions are reserved for infrastructure failures and misuse.
// All types here are immutable after construction and safe to share between threads.
//
//   Error                      base; answers backend(), sqlstate(), retryable()
//   ├── UsageError             bad argument or misuse: empty/oversized name, TTL <= 0, malformed URL
//   │   └── UnsupportedError   the backend cannot do this (e.g. session locks on SQLite)
//   ├── ConnectionError        backend unreachable, connection lost, wrong credentials
//   ├── TimeoutError           an infrastructure wait (busy database) ran out; NOT "lock not acquired"
//   ├── LeaseLostError         an operation needed a lease that is no longer held
//   ├── InDoubtError           the outcome of a state-changing call is unknown (connection broke mid-call)
//   ├── ClockJumpError         the service's clock moved unlike this host's between two renewals
//                              (reported through on_background_error only)
//   ├── DegradedError          the service runs without something it normally uses (a wake-up
//                              channel): slower, never less safe (on_background_error only, once)
//   └── SchemaError            lock tables missing, or the database schema is newer than this library
#ifndef DBLOCK_ERRORS_H_
#define DBLOCK_ERRORS_H_

#include <stdexcept>
#include <string>

namespace dblock {

class Error : public std::runtime_error {
 public:
  Error(std::string message, std::string backend = {}, std::string sqlstate = {}, bool retryable = false)
      : std::runtime_error(std::move(message)),
        backend_(std::move(backend)),
        sqlstate_(std::move(sqlstate)),
        retryable_(retryable) {}

  // Name of the backend that raised the error ("sqlite", "postgresql", ...), empty for core errors.
  const std::string& backend() const noexcept { return backend_; }
  // SQLSTATE (or the driver's native code rendered as text) when the backend reported one, else empty.
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  // True when repeating the same call may succeed (serialization failure, deadlock, busy database).
  bool retryable() const noexcept { return retryable_; }

 private:
  std::string backend_;
  std::string sqlstate_;
  bool retryable_;
};

class UsageError : public Error {
 public:
  using Error::Error;
};

class UnsupportedError : public UsageError {
 public:
  using UsageError::UsageError;
};

class ConnectionError : public Error {
 public:
  using Error::Error;
};

class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The service's clock moved more, or less, than this host's between two renewals of a lease,
// beyond what the round trips and the drift margin explain: it was stepped. The lease is in doubt
// until the next renewal (made at once) confirms it. Passed to on_background_error; never thrown.
class ClockJumpError : public Error {
 public:
  using Error::Error;
};

// The service could not set up something it normally uses and works without it: waiters poll
// where they would be woken, say. Slower, never less safe. Reported once per manager, when it is
// built, through on_background_error; never thrown.
class DegradedError : public Error {
 public:
  using Error::Error;
};

class LeaseLostError : public Error {
 public:
  using Error::Error;
};

class InDoubtError : public Error {
 public:
  using Error::Error;
};

class SchemaError : public Error {
 public:
  using Error::Error;
};

// The service refused a statement for lack of a privilege (PostgreSQL SQLSTATE 42501; MariaDB
// errors 1142, 1143, 1227, 1370): the role can connect but may not do this. Not retryable.
class PermissionError : public Error {
 public:
  using Error::Error;
};

// A fault that may pass while the caller is still willing to wait, the one rule the engine and the
// dblock command share: the error is retryable (a busy service, a deadlock), the service could not
// be reached or the connection broke (ConnectionError), or the outcome of the call is unknown
// (InDoubtError; acquire attempts are idempotent per owner secret, so the next one finds a lease the
// lost one took). Not transient: misuse, a lost lease, a missing schema, a missing privilege, and a
// TimeoutError (an infrastructure wait that already spent its time).
bool is_transient(const Error& e) noexcept;

}  // namespace dblock

#endif  // DBLOCK_ERRORS_H_
