#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace dblock::testing {

Child::Child(const std::vector<std::string>& argv) {
  int fds[2];
  int in[2];
  if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also from the parent, so signal() works even before the child ran
  close(fds[1]);
  close(in[0]);
  out_fd_ = fds[0];
  in_fd_ = in[1];
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_), out_fd_(other.out_fd_), in_fd_(other.in_fd_), buffer_(std::move(other.buffer_)),
      reaped_(other.reaped_) {
  other.pid_ = -1;
  other.out_fd_ = -1;
  other.in_fd_ = -1;
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (in_fd_ >= 0) close(in_fd_);
}

void Child::write_line(const std::string& line) {
  std::string data = line + "\n";
  if (in_fd_ < 0 || ::write(in_fd_, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    throw std::runtime_error("write to child stdin failed");
  }
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || out_fd_ < 0) return std::nullopt;
    pollfd p{out_fd_, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return std::nullopt;
    char chunk[4096];
    ssize_t n = ::read(out_fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(out_fd_);
      out_fd_ = -1;
      if (buffer_.empty()) return std::nullopt;
      std::string line = std::move(buffer_);
      buffer_.clear();
      return line;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

void Child::signal(int sig) {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, sig);
  }
}

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // bounded by deadline
  }
}

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  return std::string(buf, static_cast<std::size_t>(n));
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/dblock-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dblock::testing
