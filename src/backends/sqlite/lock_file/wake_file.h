// Cross-process wake-ups for waiters of one lock file (docs/backends/sqlite.md, "Waiting").
//
// Every process of a lock file is on one machine, so a waiter sleeps in the kernel instead of
// polling: in FUTEX_WAIT on a 32-bit slot of `<lock file>-wake`, a 4 KiB file mapped shared by
// every process of the lock file, and whatever frees a name (a release, a force-release, a waiter
// leaving the line) increments the name's slot and wakes its sleepers. A wake is a hint only: the
// waiter then reads the row and takes the lease through the lock file as before, so fences,
// expiry and order stay the row's. Names share a slot when their hashes collide (a wake more,
// never one missed), and a crashed holder leaves nothing behind (a slot is a counter, not a lock);
// its waiter's sleep is bounded by the lease's remaining time and the engine's refresh.
//
// The file gets the lock file's protections: created 0600 in the same directory, never through a
// symbolic link, checked with the other companions (file_trust.h). Thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_WAKE_FILE_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_WAKE_FILE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dblock::sqlite {

class WakeFile {
 public:
  // The wake file of the lock file at `lock_path` (created when missing), or null when it cannot
  // be used (it cannot be created, allocated or mapped): the waiters then poll, as without it, and
  // `why_not` says why in a sentence. Throws ConnectionError when it is there but not to be
  // trusted (a symbolic link, another owner, writable by others).
  static std::unique_ptr<WakeFile> open(const std::string& lock_path, std::string& why_not);
  ~WakeFile();
  WakeFile(const WakeFile&) = delete;
  WakeFile& operator=(const WakeFile&) = delete;

  // The slot of `name` among the tables named by `prefix`.
  std::atomic<std::uint32_t>& slot(std::string_view prefix, std::string_view name) const;
  // Increments `slot` and wakes every process sleeping on it.
  static void wake(std::atomic<std::uint32_t>& slot) noexcept;
  // Sleeps while `slot` still holds `seen`, for at most `timeout` (rounded up to a microsecond).
  // Returns early on a wake, a signal, or when the value had already changed.
  static void wait(std::atomic<std::uint32_t>& slot, std::uint32_t seen, std::chrono::microseconds timeout) noexcept;

  static constexpr std::size_t kSlots = 1024;

 private:
  explicit WakeFile(void* map) : map_(map) {}
  void* map_;
};

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_WAKE_FILE_H_
