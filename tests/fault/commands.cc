#include "commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <thread>

#include "fault_common.h"

namespace dblock::fault {

using namespace std::chrono_literals;

std::optional<int> wait_pid(pid_t pid, std::chrono::milliseconds timeout) {
  const std::int64_t deadline = mono_ns() + timeout.count() * kMs;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (mono_ns() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(1ms);  // polling a child's exit, bounded by the deadline
  }
}

int run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::string* out,
                const std::string& err_path) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  const std::int64_t deadline = mono_ns() + timeout.count() * kMs;
  std::string captured;
  bool timed_out = false;
  for (;;) {
    std::int64_t left = (deadline - mono_ns()) / kMs;
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    captured.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  auto status = wait_pid(pid, timed_out ? 5000ms : timeout);
  if (!status) {
    kill(pid, SIGKILL);
    status = wait_pid(pid, 5000ms);
  }
  if (out) *out = captured;
  if (timed_out || !status || !WIFEXITED(*status)) return -1;
  return WEXITSTATUS(*status);
}

}  // namespace dblock::fault
