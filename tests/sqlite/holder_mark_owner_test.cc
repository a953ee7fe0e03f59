// The holder marks' owner check (src/backends/sqlite/holder_mark.h, mark_owner.h): a mark bound by
// another local user, who cannot even open the lock file, does not keep the name from its users.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>

#include "dblock/dblock.h"
#include "lock_file/holder_mark.h"
#include "process.h"

using namespace std::chrono_literals;
using dblock::testing::TempDir;

namespace {

constexpr uid_t kNobody = 65534;

socklen_t abstract_address(const std::string& name, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// Whether this process can bind the abstract name `name` now (false with EADDRINUSE: someone has it).
bool bindable(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr;
  const socklen_t length = abstract_address(name, addr);
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), length) == 0;
  const int error = errno;
  ::close(fd);
  if (!bound) REQUIRE(error == EADDRINUSE);
  return bound;
}

// A child process of uid and gid nobody keeping `name` bound and listening until destroyed.
class ForeignSquatter {
 public:
  explicit ForeignSquatter(const std::string& name) {
    int ready[2], hold[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(hold) == 0);
    sockaddr_un addr;
    const socklen_t length = abstract_address(name, addr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {  // async-signal-safe calls only from here
      ::close(ready[0]);
      ::close(hold[1]);
      char ok = 0;
      if (::setresgid(kNobody, kNobody, kNobody) == 0 && ::setresuid(kNobody, kNobody, kNobody) == 0) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        ok = fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), length) == 0 && ::listen(fd, 0) == 0;
      }
      if (::write(ready[1], &ok, 1) != 1) ::_exit(1);
      char c;
      while (::read(hold[0], &c, 1) < 0 && errno == EINTR) {
      }  // until the parent closes its end
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(hold[0]);
    hold_ = hold[1];
    char ok = 0;
    const bool reported = ::read(ready[0], &ok, 1) == 1;
    ::close(ready[0]);
    REQUIRE(reported);
    REQUIRE(ok == 1);
  }
  ~ForeignSquatter() {
    ::close(hold_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  ForeignSquatter(const ForeignSquatter&) = delete;
  ForeignSquatter& operator=(const ForeignSquatter&) = delete;

 private:
  pid_t pid_ = -1;
  int hold_ = -1;
};

}  // namespace

TEST_CASE("sqlite: a holder mark bound by another user does not keep the name from the lock file's users",
          "[sqlite][files][marks]") {
  // The README's test command runs as root; elsewhere this fails, saying why (never an empty pass).
  INFO("needs root (a child drops to nobody)");
  REQUIRE(::geteuid() == 0);
  TempDir dir;  // 0700, root's: nobody cannot open the lock file in it
  const std::string path = dir.file("squatted.db"), url = "sqlite://" + path;
  const std::string resolved = (std::filesystem::canonical(dir.path()) / "squatted.db").string();
  const std::string any = dblock::sqlite::any_mark_name(resolved, "dblock_", "k");
  dblock::ManagerOptions options;
  options.reaper = false;
  auto manager = dblock::open(url, options);
  {
    auto lease = manager->try_acquire("k");
    REQUIRE(lease);
    REQUIRE_FALSE(bindable(any));  // the name computed here is the one the service binds
  }
  REQUIRE(bindable(any));

  ForeignSquatter squatter(any);
  REQUIRE_FALSE(bindable(any));
  auto taken = manager->try_acquire("k");
  CHECK(taken);
  if (taken) taken->release();
  auto waited = manager->acquire("k", 2s);  // the waiting path's probe ignores it too
  CHECK(waited);
  if (waited) waited->release();
  auto other = dblock::open(url, options);  // a second manager on the same file: the row decides, as ever
  auto held = manager->try_acquire("k");
  REQUIRE(held);
  CHECK_FALSE(other->try_acquire("k"));
}
