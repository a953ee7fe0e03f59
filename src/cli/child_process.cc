#include "child_process.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace dblock::cli {

namespace {

// Closes every descriptor from `first` to the end, but `keep`. Async-signal-safe (runs between
// fork and exec).
void close_from(int first, int keep) {
  if (keep >= first) {
    if (keep > first && ::close_range(static_cast<unsigned>(first), static_cast<unsigned>(keep - 1), 0) != 0) {
      for (int fd = first; fd < keep; ++fd) ::close(fd);
    }
    first = keep + 1;
  }
  if (::close_range(static_cast<unsigned>(first), UINT_MAX, 0) == 0) return;
  rlimit limit{};  // a kernel before 5.9: close up to the descriptor limit
  const rlim_t end = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur : 65536;
  for (rlim_t fd = static_cast<rlim_t>(first); fd < end; ++fd) ::close(static_cast<int>(fd));
}

// Makes `pgid` the foreground group of terminal `tty` from a process that may be in a background
// group (which would get SIGTTOU for it). Async-signal-safe.
void give_terminal(int tty, pid_t pgid) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
  ::tcsetpgrp(tty, pgid);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Between fork and exec: only async-signal-safe calls. Reports a failure's errno on `error_fd`.
[[noreturn]] void exec_child(const ChildSpec& spec, char* const* argv, char* const* envp, pid_t parent, int tty,
                             int error_fd) {
  ::setpgid(0, 0);
  if (tty >= 0) give_terminal(tty, ::getpid());
  if (spec.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // dblock died before the line above: do not start
  }
  close_from(3, error_fd);
  ::sigprocmask(SIG_SETMASK, &spec.mask, nullptr);
  ::execvpe(argv[0], argv, envp);
  const int error = errno;
  [[maybe_unused]] ssize_t n = ::write(error_fd, &error, sizeof error);
  ::_exit(127);
}

// The terminal (on stdin, stdout or stderr) whose foreground process group is dblock's, or -1:
// COMMAND then takes the foreground, so that it can read the terminal and gets its Ctrl-C and
// Ctrl-Z, as it would without dblock.
int foreground_terminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::isatty(fd) == 1 && ::tcgetpgrp(fd) == ::getpgrp()) return fd;
  }
  return -1;
}

}  // namespace

int Child::start(const ChildSpec& spec) {
  // Everything the child uses is made before fork (it may not allocate after it).
  std::vector<std::string> args = spec.argv, env = spec.env;
  std::vector<char*> argv, envp;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  const int tty = foreground_terminal();
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return errno;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(error_pipe[0]);
    ::close(error_pipe[1]);
    return error;
  }
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), parent, tty, error_pipe[1]);

  ::close(error_pipe[1]);
  // Also here, so that neither order of the two calls leaves a window (the shells' rule).
  ::setpgid(pid, pid);
  if (tty >= 0) give_terminal(tty, pid);
  pid_ = pid;
  tty_ = tty;
  int error = 0;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n != static_cast<ssize_t>(sizeof error)) return 0;  // closed by a successful exec
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  reaped();
  return error;
}

void Child::signal_group(int sig) const {
  if (pid_ > 0) ::kill(-pid_, sig);
}

void Child::stop_with() {
  if (tty_ >= 0) give_terminal(tty_, ::getpgrp());
  ::kill(0, SIGTSTP);  // our own process group: the shell sees its job stop; returns once continued
  if (tty_ >= 0) give_terminal(tty_, pid_);
  signal_group(SIGCONT);
}

void Child::reaped() {
  if (tty_ >= 0) give_terminal(tty_, ::getpgrp());
  pid_ = -1;
  tty_ = -1;
}

}  // namespace dblock::cli
