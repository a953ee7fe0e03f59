#include "wake_file.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "file_trust.h"
#include "scoped_fd.h"

namespace dblock::sqlite {

namespace {

constexpr std::size_t kFileSize = WakeFile::kSlots * sizeof(std::uint32_t);
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "a futex word is a plain 32-bit integer");

// FNV-1a, 64 bits: the same slot in every process and every version that shares the file.
std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) noexcept {
  // Not FUTEX_PRIVATE_FLAG: the word is in a shared file mapping, waited on by other processes.
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

std::unique_ptr<WakeFile> WakeFile::open(const std::string& lock_path, std::string& why_not) {
  const std::string path = lock_path + "-wake";
  auto unusable = [&](const std::string& what) {
    why_not = "sqlite: " + what + ": waiters poll the lock file instead of being woken at each release";
    return nullptr;
  };
  auto failed = [&](const char* step, int error) {
    return unusable("cannot " + std::string(step) + " " + path + " (" + std::strerror(error) + ")");
  };
  const ScopedFd file(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (file.fd < 0) {
    if (errno == ELOOP) refuse_symlink(path);
    return failed("open", errno);  // a read-only directory, say
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return failed("stat", errno);
  if (!S_ISREG(st.st_mode)) return unusable(path + " is not a regular file");
  check_trusted_stat(path, "lock file companion", st);  // the open file's status: no race with a rename
  // Blocks allocated, not a sparse file: a store into a page of a hole on a full disk would be
  // SIGBUS. On a full disk the allocation fails instead, and the waiters poll.
  if (const int error = ::posix_fallocate(file.fd, 0, kFileSize); error != 0) return failed("allocate", error);
  void* map = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0);  // keeps the file
  if (map == MAP_FAILED) return failed("map", errno);
  return std::unique_ptr<WakeFile>(new WakeFile(map));
}

WakeFile::~WakeFile() { ::munmap(map_, kFileSize); }

std::atomic<std::uint32_t>& WakeFile::slot(std::string_view prefix, std::string_view name) const {
  const std::uint64_t h = fnv1a(fnv1a(0xcbf29ce484222325ULL, prefix), std::string_view("\0", 1));
  auto* slots = static_cast<std::atomic<std::uint32_t>*>(map_);
  return slots[fnv1a(h, name) % kSlots];
}

void WakeFile::wake(std::atomic<std::uint32_t>& slot) noexcept {
  slot.fetch_add(1, std::memory_order_seq_cst);
  futex(slot, FUTEX_WAKE, INT_MAX, nullptr);
}

void WakeFile::wait(std::atomic<std::uint32_t>& slot, std::uint32_t seen, std::chrono::microseconds timeout) noexcept {
  if (timeout.count() <= 0) return;
  const timespec relative{static_cast<time_t>(timeout.count() / 1'000'000),
                          static_cast<long>(timeout.count() % 1'000'000) * 1000};
  futex(slot, FUTEX_WAIT, seen, &relative);  // EAGAIN (changed), ETIMEDOUT, EINTR: all mean "look again"
}

}  // namespace dblock::sqlite
