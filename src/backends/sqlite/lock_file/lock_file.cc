#include "lock_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "dblock/errors.h"
#include "file_trust.h"

namespace dblock::sqlite {

namespace {

[[noreturn]] void fail(const std::string& message, int error) {
  throw ConnectionError("sqlite: " + message + ": " + std::strerror(error), "sqlite", std::to_string(error));
}

// Creates `dir` and its missing parents, each new one with mode 0700.
void make_private_directories(const std::filesystem::path& dir) {
  if (dir.empty()) return;
  struct stat st{};
  if (::stat(dir.c_str(), &st) == 0) return;
  make_private_directories(dir.parent_path());
  if (::mkdir(dir.c_str(), 0700) != 0) {
    const int error = errno;
    if (error == EEXIST) return;  // made by another process meanwhile
    fail("cannot create directory " + dir.string(), error);
  }
  ::chmod(dir.c_str(), 0700);  // the umask may have taken owner bits
}

}  // namespace

void prepare_lock_file(const std::string& path, bool create_directories) {
  if (create_directories) make_private_directories(std::filesystem::path(path).parent_path());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::fchmod(fd, 0600);  // the umask may have taken owner bits
    ::close(fd);
    return;
  }
  if (errno != EEXIST) return;  // sqlite3_open_v2 reports it, with its own words
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) refuse_symlink(path);
}

std::string resolve_directory(const std::string& path) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) == nullptr) return path;
  return (std::filesystem::path(resolved) / p.filename()).string();
}

std::optional<FileIdentity> file_identity(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

}  // namespace dblock::sqlite
