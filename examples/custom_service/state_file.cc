#include "state_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "dblock/service/kit.h"
#include "lockdir_service.h"

namespace lockdir {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what, int error) {
  throw dblock::ConnectionError(std::string(kServiceName) + ": " + what + ": " + std::strerror(error), kServiceName,
                                {}, /*retryable=*/true);
}

// A descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Takes the exclusive flock on `fd` by the call's deadline.
void lock_by_deadline(int fd) {
  const Clock::time_point deadline = dblock::call_deadline();
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
    if (errno != EWOULDBLOCK && errno != EINTR) fail("flock", errno);
    if (Clock::now() >= deadline) {
      throw dblock::ConnectionError(std::string(kServiceName) + ": the state file stayed locked past the call's deadline",
                                    kServiceName, {}, /*retryable=*/true);
    }
    std::this_thread::sleep_for(dblock::service::jittered(std::chrono::microseconds(500)));
  }
}

std::int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "-" stands for the empty string (the stream reads words).
std::string unhex(const std::string& text) {
  if (text == "-") return "";
  if (text.size() % 2 != 0) throw std::invalid_argument("odd hex");
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 2) out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  return out;
}

std::string word(const std::string& text) { return text.empty() ? "-" : text; }

}  // namespace

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

StateFile::StateFile(const std::filesystem::path& dir, const std::string& prefix)
    : state_(dir / (prefix + "state")), lock_(dir / (prefix + "state.lock")) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) fail("cannot make the directory " + dir.string(), error.value());
}

void StateFile::transact(const std::function<bool(State& state, std::int64_t now_us)>& change) const {
  const Fd lock(::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.get() < 0) fail("cannot open " + lock_.string(), errno);
  lock_by_deadline(lock.get());
  State state = read();
  if (change(state, wall_clock_us())) write(state);
}  // the flock ends with the descriptor

// Format: a first line "lockdir <last fence>", then a line an entry:
// <hex name> <fence> <owner or -> <hex holder or -> <acquired> <expires> <renewals>.
State StateFile::read() const {
  State state;
  std::ifstream in(state_);
  if (!in) {
    if (errno == ENOENT) return state;  // nothing held yet
    fail("cannot read " + state_.string(), errno);
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    try {
      if (number == 1) {
        std::string magic;
        if (!(fields >> magic >> state.last_fence) || magic != "lockdir") throw std::invalid_argument("header");
        continue;
      }
      std::string name, owner, holder;
      Entry e;
      if (!(fields >> name >> e.fence >> owner >> holder >> e.acquired_us >> e.expires_us >> e.renewals)) {
        throw std::invalid_argument("fields");
      }
      e.owner = owner == "-" ? "" : owner;
      e.holder = unhex(holder);
      state.entries[unhex(name)] = e;
    } catch (const std::exception&) {
      throw dblock::Error(std::string(kServiceName) + ": " + state_.string() + " line " + std::to_string(number) +
                              " is not a lockdir entry (was the file replaced?)",
                          kServiceName);
    }
  }
  return state;
}

void StateFile::write(const State& state) const {
  std::string text = "lockdir " + std::to_string(state.last_fence) + "\n";
  for (const auto& [name, e] : state.entries) {
    text += hex(name) + " " + std::to_string(e.fence) + " " + word(e.owner) + " " + word(hex(e.holder)) + " " +
            std::to_string(e.acquired_us) + " " + std::to_string(e.expires_us) + " " + std::to_string(e.renewals) +
            "\n";
  }
  // A new file renamed over the old: a crash or a full disk leaves the old state whole.
  const std::filesystem::path next = state_.string() + ".next";
  const Fd out(::open(next.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (out.get() < 0) fail("cannot write " + next.string(), errno);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(out.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write " + next.string(), errno);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(out.get()) != 0) fail("cannot sync " + next.string(), errno);
  if (::rename(next.c_str(), state_.c_str()) != 0) fail("cannot replace " + state_.string(), errno);
}

}  // namespace lockdir
