#include "holder_mark.h"

#include "mark_owner.h"
#include "owner_digest.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace dblock::sqlite {

namespace {

// The first `digits` lowercase hex digits of SHA-256(`data`).
std::string sha256_hex(const std::string& data, std::size_t digits) {
  Sha256 md;
  if (!sha256(data.data(), data.size(), md)) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < md.size() && out.size() < digits; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xf];
  }
  return out;
}

// Device, inode and (where the file system keeps one) birth time of the file at `path`: a file
// created again at the path, even with a reused inode number, differs. "" when it cannot be read.
std::string file_identity_text(const std::string& path) {
  struct statx st {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &st) != 0) return {};
  std::string out = std::to_string(st.stx_dev_major) + ":" + std::to_string(st.stx_dev_minor) + ":" +
                    std::to_string(st.stx_ino);
  if (st.stx_mask & STATX_BTIME) {
    out += ":" + std::to_string(st.stx_btime.tv_sec) + "." + std::to_string(st.stx_btime.tv_nsec);
  }
  return out;
}

// The abstract address "\0" + `name`, and its length (abstract names are not NUL-terminated).
socklen_t abstract_address(const std::string& name, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  const std::size_t n = std::min(name.size(), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

int new_socket() { return ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); }

// A socket bound to `name` (and listening, when `listening`), or -1 with errno set (EADDRINUSE:
// someone has it).
int bind_mark(const std::string& name, bool listening) {
  const int fd = new_socket();
  if (fd < 0) return -1;
  sockaddr_un addr;
  const socklen_t length = abstract_address(name, addr);
  // Backlog 0: a prober's connection waits in the queue until the mark closes; one fills it, and
  // later probers get EAGAIN, which says the same (bound and listening).
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), length) == 0 && (!listening || ::listen(fd, 0) == 0)) {
    return fd;
  }
  const int error = errno;
  ::close(fd);
  errno = error;
  return -1;
}

// Whether a listening socket is bound to `name`. Unknown (socket unavailable): true, so that the
// caller falls back to the row.
bool listening(const std::string& name) {
  const int fd = new_socket();
  if (fd < 0) return true;
  sockaddr_un addr;
  const socklen_t length = abstract_address(name, addr);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), length);
  const int error = errno;
  ::close(fd);
  return rc == 0 || error != ECONNREFUSED;
}

// Whether the any-mark `any`, found bound, counts: its binder is of this process's effective uid
// or root, or could not be told (sock_diag unavailable: the conservative answer, as before the
// owner check). A mark of another uid is ignored: that user cannot hold the lock file (file_trust.h
// refuses files of other users), so the row decides. Called only where the mark would refuse.
bool counts(const std::string& any) {
  constexpr std::chrono::milliseconds kDumpBudget{100};
  return mark_owner(any, kDumpBudget) != MarkOwner::kUntrusted;
}

}  // namespace

std::string any_mark_name(const std::string& path, const std::string& prefix, std::string_view name) {
  std::string text = path;
  text += '\0';
  text += prefix;
  text += '\0';
  text += name;
  return "dblock:" + sha256_hex(text, 40);
}

HolderMarks::HolderMarks(const std::string& path, const std::string& prefix) : path_(path), prefix_(prefix) {
  const std::string identity = file_identity_text(path);
  if (!identity.empty()) file_tag_ = sha256_hex(identity, 16);
}

HolderMarks::~HolderMarks() {
  for (auto& [name, entry] : marks_) {
    ::close(entry.any_fd);
    ::close(entry.file_fd);
  }
}

std::string HolderMarks::any_name(std::string_view name) const { return any_mark_name(path_, prefix_, name); }

HolderMarks::Claim HolderMarks::claim(std::string_view name, const OwnerSecret& secret) {
  if (file_tag_.empty()) return Claim::kUnmarked;
  dblock::service::UniqueLock lock(mutex_);
  if (auto it = marks_.find(name); it != marks_.end()) {
    auto& holders = it->second.holders;
    if (std::find(holders.begin(), holders.end(), secret) == holders.end()) holders.push_back(secret);
    return Claim::kMarked;
  }
  const std::string any = any_name(name);
  if (any.size() <= 7) return Claim::kUnmarked;  // no digest
  const std::string file = any + ":" + file_tag_;
  const int any_fd = bind_mark(any, true);
  if (any_fd < 0) {
    const int error = errno;
    // What follows reads only the kernel (the owner lookup may take its whole budget): releases,
    // which drop marks under the mutex, must not wait for it.
    lock.unlock();
    if (error != EADDRINUSE) return Claim::kUnmarked;  // no sockets here: the row alone decides, as without marks
    return listening(file) || !counts(any) ? Claim::kUnmarked : Claim::kHeldElsewhere;
  }
  const int file_fd = bind_mark(file, true);
  if (file_fd < 0) {  // a holder of this file is between its two binds or closes: the row decides
    ::close(any_fd);
    return Claim::kUnmarked;
  }
  marks_.emplace(std::string(name), Entry{any_fd, file_fd, {secret}});
  return Claim::kMarked;
}

bool HolderMarks::held_elsewhere(std::string_view name) {
  if (file_tag_.empty()) return false;
  {
    dblock::service::MutexLock lock(mutex_);
    if (marks_.find(name) != marks_.end()) return false;
  }
  const std::string any = any_name(name);
  return any.size() > 7 && listening(any) && !listening(any + ":" + file_tag_) && counts(any);
}

void HolderMarks::drop(std::string_view name, const OwnerSecret& secret) noexcept {
  dblock::service::MutexLock lock(mutex_);
  auto it = marks_.find(name);
  if (it == marks_.end()) return;
  auto& holders = it->second.holders;
  holders.erase(std::remove(holders.begin(), holders.end(), secret), holders.end());
  if (!holders.empty()) return;
  // The any-mark first: a newcomer that finds it free and the file-mark still bound takes the
  // row's word; the other order would show "held on another file" for an instant.
  ::close(it->second.any_fd);
  ::close(it->second.file_fd);
  marks_.erase(it);
}

}  // namespace dblock::sqlite
