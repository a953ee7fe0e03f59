// Running and supervising COMMAND while a lock is held (supervisor.h).
//
// Everything here runs on the main thread: signals come from the signalfd, a lost lock from the
// self-pipe the renewal thread writes to; the loop poll()s on both and reaps COMMAND with waitpid().
#include "supervisor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "args.h"
#include "child_process.h"
#include "dblock/errors.h"
#include "dblock/url.h"
#include "exit_codes.h"
#include "output.h"
#include "signals.h"

extern char** environ;

namespace dblock::cli {

std::string& last_reported_error() {
  thread_local std::string error;
  return error;
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// With --on-lost term: how long COMMAND gets between SIGTERM and SIGKILL.
constexpr milliseconds kTermGrace{5'000};
// How long a lease found lost waits for the renewal thread's reason (written just after it marks
// the lease lost) before COMMAND is told with the generic one.
constexpr milliseconds kReasonGrace{50};

// DBLOCK_URL as COMMAND sees it: without the password and secret parameters (COMMAND must not
// reach dblock's connections; a nested dblock finds its credentials as the client libraries do).
// A value dblock cannot parse is not passed on at all, since it cannot be cleaned.
std::optional<std::string> url_for_child(std::string_view value) {
  try {
    return parse_url(value).without_secrets();
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return kExitSignalBase + WTERMSIG(status);
  return kExitError;
}

// Runs COMMAND while `lock` is held and supervises it. Returns dblock's exit status.
class Supervisor {
 public:
  Supervisor(HeldLock& lock, const RunOptions& o, int sfd, int lost_fd)
      : lock_(lock), o_(o), sfd_(sfd), lost_fd_(lost_fd) {}

  // The last signal forwarded to COMMAND (0: none): someone asked dblock to stop.
  int signalled() const { return signalled_; }
  bool lost() const { return lost_; }

  int run(const sigset_t& child_mask) {
    if (int rc = spawn(child_mask); rc != 0) {
      std::fprintf(stderr, "dblock: cannot run '%s': %s\n", o_.command[0].c_str(), std::strerror(rc));
      finish_release();
      return rc == ENOENT ? kExitCommandNotFound : kExitCannotExecute;
    }
    int status = wait_for_child();
    const Clock::time_point ended_at = Clock::now();
    const std::optional<Clock::time_point> safe_at_end = lock_.safe_until();
    child_.reaped();  // its pid may be reused: never signal it again
    int child_exit = exit_status_of(status);
    // The lease was still safe when COMMAND ended: whatever happens to it from now on did not
    // happen while COMMAND ran.
    const bool held_to_the_end = safe_at_end && *safe_at_end > ended_at;

    // A loss noticed only now (the child finished first) still counts: COMMAND did not hold the
    // lock for all of its run.
    drain_lost_pipe();
    if (!lost_ && lock_.lost() && !held_to_the_end) {
      note_lost("lost (noticed when COMMAND ended)", /*act=*/false);
    }
    ReleaseResult released = finish_release();
    if (!lost_ && released == ReleaseResult::kAlreadyLost) {
      if (held_to_the_end && Clock::now() >= *safe_at_end) {
        // The release reached the backend only after the lease's safe time: it found the lease
        // expired, which says nothing about the time COMMAND ran.
        std::fprintf(stderr,
                     "dblock: warning: the release of %s reached the backend only after the lease expired; "
                     "COMMAND had ended inside the lease (%s left)\n",
                     locks_text(o_).c_str(),
                     format_duration(std::chrono::duration_cast<milliseconds>(*safe_at_end - ended_at)).c_str());
      } else {
        note_lost("the backend no longer had the lock when it was released", /*act=*/false);
      }
    }
    if (lost_) {
      if (o_.on_lost == OnLost::kIgnore) {
        std::fprintf(stderr, "dblock: --on-lost ignore: passing on COMMAND's exit status %d\n", child_exit);
        return child_exit;
      }
      return kExitLeaseLost;
    }
    return child_exit;
  }

 private:
  int spawn(const sigset_t& child_mask) {
    ChildSpec spec;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      if (is_run_variable(entry)) continue;
      if (entry.rfind("DBLOCK_URL=", 0) == 0) {
        if (std::optional<std::string> url = url_for_child(entry.substr(11))) spec.env.push_back("DBLOCK_URL=" + *url);
        continue;
      }
      spec.env.emplace_back(entry);
    }
    for (std::string& entry : lock_.environment()) spec.env.push_back(std::move(entry));
    spec.argv = o_.command;
    spec.mask = child_mask;
    spec.die_with_parent = o_.kill_with_dblock;
    return child_.start(spec);
  }

  int wait_for_child() {
    for (;;) {
      int status = 0;
      pid_t r = ::waitpid(child_.pid(), &status, WNOHANG | WUNTRACED);
      if (r == child_.pid() && WIFSTOPPED(status)) {
        child_.stop_with();
        continue;
      }
      if (r == child_.pid()) return status;
      if (r < 0 && errno != EINTR) {
        std::fprintf(stderr, "dblock: waitpid: %s\n", std::strerror(errno));
        return W_EXITCODE(kExitError, 0);
      }

      pollfd fds[2] = {{sfd_, POLLIN, 0}, {lost_fd_, POLLIN, 0}};
      int n = ::poll(fds, 2, poll_timeout_ms());
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "dblock: poll: %s\n", std::strerror(errno));
      }
      if (n > 0 && fds[0].revents != 0) forward_signals();
      if (n > 0 && fds[1].revents != 0) drain_lost_pipe();
      // Past safe-until the lease counts as lost even if the renewal thread has not said so
      // (it may be stuck on an unresponsive backend). The renewal thread marks a lease lost just
      // before it writes why: the reason gets kReasonGrace to arrive.
      if (!lost_ && lock_.lost()) {
        pollfd reason{lost_fd_, POLLIN, 0};
        if (::poll(&reason, 1, static_cast<int>(kReasonGrace.count())) > 0) drain_lost_pipe();
        if (!lost_) note_lost("lost (safe-until passed or session gone)", /*act=*/true);
      }
      if (kill_at_ && Clock::now() >= *kill_at_) {
        std::fprintf(stderr, "dblock: COMMAND still running %s after SIGTERM; sending SIGKILL\n",
                     format_duration(kTermGrace).c_str());
        child_.signal_group(SIGKILL);
        kill_at_.reset();
      }
    }
  }

  // Until the next thing that needs checking without an event: the SIGKILL deadline, or the
  // lease's safe-until (the renewal thread moves it on). At most 1 s.
  int poll_timeout_ms() const {
    auto now = Clock::now();
    milliseconds timeout{1'000};
    auto until = [&](Clock::time_point t) {
      return std::chrono::ceil<milliseconds>(t - now) + milliseconds(1);
    };
    if (kill_at_) timeout = std::min(timeout, until(*kill_at_));
    if (!lost_) {
      std::optional<Clock::time_point> safe = lock_.safe_until();
      if (safe && *safe > now) timeout = std::min(timeout, until(*safe));
    }
    return static_cast<int>(std::max<std::int64_t>(timeout.count(), 0));
  }

  void forward_signals() {
    for (const signalfd_siginfo& info : read_signals(sfd_)) {
      int sig = static_cast<int>(info.ssi_signo);
      if (!is_forwarded(sig)) continue;  // SIGCHLD: waitpid() at the top of the loop
      child_.signal_group(sig);
      signalled_ = sig;
    }
  }

  void drain_lost_pipe() {
    char buf[512];
    std::string reason;
    for (;;) {
      ssize_t n = ::read(lost_fd_, buf, sizeof buf);
      if (n > 0) {
        reason.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    if (reason.empty()) return;
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == '\0')) reason.pop_back();
    if (!lost_) note_lost(reason.empty() ? "lost" : reason, /*act=*/child_.pid() > 0);
  }

  void note_lost(const std::string& reason, bool act) {
    lost_ = true;
    std::string fence;
    if (std::optional<std::int64_t> f = lock_.fence()) fence = " (fence " + std::to_string(*f) + ")";
    std::fprintf(stderr, "dblock: %s%s lost while COMMAND was running: %s\n", locks_text(o_).c_str(), fence.c_str(),
                 reason.c_str());
    if (!act || child_.pid() <= 0) return;
    switch (o_.on_lost) {
      case OnLost::kTerm:
        std::fprintf(stderr, "dblock: sending SIGTERM to COMMAND (SIGKILL after %s)\n",
                     format_duration(kTermGrace).c_str());
        child_.signal_group(SIGTERM);
        kill_at_ = Clock::now() + kTermGrace;
        break;
      case OnLost::kKill:
        std::fprintf(stderr, "dblock: sending SIGKILL to COMMAND\n");
        child_.signal_group(SIGKILL);
        break;
      case OnLost::kIgnore:
        std::fprintf(stderr, "dblock: --on-lost ignore: COMMAND keeps running without the lock\n");
        break;
    }
  }

  ReleaseResult finish_release() {
    last_reported_error().clear();
    ReleaseResult result = lock_.release();
    if (result == ReleaseResult::kInDoubt) {
      const std::string cause = last_reported_error().empty() ? "backend connection problem" : last_reported_error();
      std::fprintf(stderr, "dblock: release of %s is in doubt (%s); %s\n", locks_text(o_).c_str(),
                   terminal_text(cause).c_str(),
                   o_.mode == RunMode::kSession
                       ? "the server frees a session lock when it notices the session is gone"
                       : ("the lease expires on its own within " + format_duration(o_.ttl)).c_str());
    }
    return result;
  }

  HeldLock& lock_;
  const RunOptions& o_;
  const int sfd_;
  const int lost_fd_;
  Child child_;
  bool lost_ = false;
  int signalled_ = 0;
  std::optional<Clock::time_point> kill_at_;

};

}  // namespace

Supervised supervise(HeldLock& lock, const RunOptions& o, int sfd, int lost_fd, const sigset_t& child_mask) {
  Supervisor supervisor(lock, o, sfd, lost_fd);
  const int status = supervisor.run(child_mask);
  return {status, supervisor.signalled(), supervisor.lost()};
}

}  // namespace dblock::cli
