// A file descriptor closed when its owner goes out of scope. Internal to the SQLite service.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_SCOPED_FD_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_SCOPED_FD_H_

#include <unistd.h>

namespace dblock::sqlite {

struct ScopedFd {
  explicit ScopedFd(int descriptor) : fd(descriptor) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() {
    if (fd >= 0) ::close(fd);
  }

  const int fd;
};

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_SCOPED_FD_H_
