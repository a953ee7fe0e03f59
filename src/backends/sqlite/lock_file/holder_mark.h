// Holder marks: a sign, kept by the kernel rather than in the lock file, that a lease on a name
// of a lock file is held. Internal.
//
// A lock file deleted or replaced under a live holder leaves that holder's row in a file nobody
// else sees; a newcomer on the new file finds the name free. A mark closes that window: the holder
// keeps two abstract-namespace Unix sockets bound (names derived from the lock file's resolved
// path, the table prefix and the lock name; the second also from the identity of the file the
// holder opened: device, inode and birth time):
//   any-mark   "\0dblock:" + hex(SHA-256(path, prefix, name))[0, 40)
//   file-mark  any-mark + ":" + hex(SHA-256(file identity))[0, 16)
// Both listen (backlog 0), so that a prober can tell "bound" by connecting, without binding.
// Before an acquire writes the row, it binds the any-mark (and then the file-mark). When the
// any-mark is bound by someone else, a listening file-mark of the newcomer's own file means the
// holder is on this same file, whose row decides as ever; no such file-mark means the holder is
// on another (deleted or replaced) file: the name is held, whatever the row says.
//
// The kernel frees a mark when its socket closes: at release, at lease_lost, at process death.
// Sockets are close-on-exec (no child inherits one). Abstract sockets are per network namespace:
// processes in different network namespaces do not see each other's marks.
// docs/backends/sqlite.md, "A file deleted or replaced under its holders".
//
// Owner check: a bound any-mark refuses a name only when its binder is of this process's effective
// uid or root (mark_owner.h; asked only then, never on an uncontended acquire). Another local user
// who binds a name's any-mark is ignored: the row decides, as without marks (such a user cannot
// hold the lock file, file_trust.h). When the binder cannot be told, the mark counts.
//
// Thread-safe. One HolderMarks per service; leases of other services (in this process or others)
// are "someone else".
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_HOLDER_MARK_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_HOLDER_MARK_H_

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"
#include "dblock/service/thread_annotations.h"

namespace dblock::sqlite {

// The any-mark's abstract name (without its leading NUL) for `name` in the file at the resolved
// `path` with table `prefix`.
std::string any_mark_name(const std::string& path, const std::string& prefix, std::string_view name);

class HolderMarks {
 public:
  // `path`: the lock file's resolved path, whose file this service opened; `prefix`: the table
  // prefix. Reads the identity of the file at `path` now.
  HolderMarks(const std::string& path, const std::string& prefix);
  ~HolderMarks();
  HolderMarks(const HolderMarks&) = delete;
  HolderMarks& operator=(const HolderMarks&) = delete;

  enum class Claim {
    kMarked,        // this service keeps the name's marks for `secret` until drop()
    kUnmarked,      // a holder of this same file has the marks (or sockets are unavailable): the row decides
    kHeldElsewhere  // a holder on another file at this path: do not grant
  };
  // Before an acquire writes the row. A kMarked claim whose acquire fails must be dropped. Where a
  // mark would refuse, the owner check may take up to its budget (100 ms), outside the marks' mutex.
  Claim claim(std::string_view name, const OwnerSecret& secret);
  // Read-only: whether a holder on another file has the name's marks (what claim() would refuse),
  // for a waiter's probe. False when this service has them.
  bool held_elsewhere(std::string_view name);
  // The lease of `secret` on `name` ended (released, lost, or not granted). The marks close with
  // the name's last lease in this service. No-op when the lease holds no mark.
  void drop(std::string_view name, const OwnerSecret& secret) noexcept;

 private:
  struct Entry {
    int any_fd = -1;
    int file_fd = -1;
    std::vector<OwnerSecret> holders;
  };
  std::string any_name(std::string_view name) const;

  const std::string path_;
  const std::string prefix_;
  std::string file_tag_;  // hex of the opened file's identity digest; "" when it could not be read
  dblock::service::Mutex mutex_;
  std::map<std::string, Entry, std::less<>> marks_ DBLOCK_GUARDED_BY(mutex_);  // by lock name
};

// Drops `secret`'s mark on `name` when it goes out of scope (after the release's row write).
class DropMarkAtExit {
 public:
  DropMarkAtExit(HolderMarks& marks, std::string_view name, const OwnerSecret& secret)
      : marks_(marks), name_(name), secret_(secret) {}
  ~DropMarkAtExit() { marks_.drop(name_, secret_); }
  DropMarkAtExit(const DropMarkAtExit&) = delete;
  DropMarkAtExit& operator=(const DropMarkAtExit&) = delete;

 private:
  HolderMarks& marks_;
  std::string_view name_;
  const OwnerSecret& secret_;
};

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_HOLDER_MARK_H_
