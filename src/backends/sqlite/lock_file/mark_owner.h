// Who bound a holder mark: the owner check that keeps other local users from blocking a name by
// binding its mark. Internal.
//
// The answer comes from the kernel's socket diagnostics (NETLINK_SOCK_DIAG, UNIX_DIAG with
// UDIAG_SHOW_NAME | UDIAG_SHOW_UID): one dump of this network namespace's Unix sockets that are
// bound and not connected (states LISTEN and CLOSE; a connection accepted on a mark carries the
// mark's name but not its binder's uid, so connected sockets are left out), looking for the
// abstract name. The uid is the socket's creator's (its file system uid at socket()).
//
// Cost: one netlink dump, linear in the number of Unix sockets of the namespace; called only when
// a mark would refuse a name (never on an uncontended acquire). Bounded by `budget` (a receive
// timeout and a steady-clock deadline) and by a cap on the messages read.
//
// Thread-safe (no shared state).
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_MARK_OWNER_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_MARK_OWNER_H_

#include <chrono>
#include <string>

namespace dblock::sqlite {

enum class MarkOwner {
  kTrusted,    // bound by a socket of this process's effective uid or of root
  kUntrusted,  // bound only by sockets of other uids, or by none now
  kUnknown     // the dump failed (no sock_diag, refused, over budget)
};

// Who has bound the abstract Unix socket name "\0" + `name` (without the leading NUL).
MarkOwner mark_owner(const std::string& name, std::chrono::milliseconds budget);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_MARK_OWNER_H_
