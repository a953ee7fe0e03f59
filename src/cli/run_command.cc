// `dblock run`: hold a lock while a child command runs.
//
// Signal handling: every signal the command forwards, and SIGCHLD, is blocked in the main thread
// *before* the LockManager starts its threads, so all threads inherit the block and the signals
// are only ever read synchronously from a signalfd by the main loop. The lost-lease callback
// (called on the manager's renewal thread) only writes the reason to a non-blocking self-pipe.
// The main loop poll()s on both and reaps the child with waitpid(); nothing sleeps to synchronise.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "args.h"
#include "child_process.h"
#include "commands.h"
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/url.h"
#include "exit_codes.h"
#include "held_lock.h"
#include "output.h"
#include "run_options.h"

extern char** environ;

namespace dblock::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The last error the manager reported on this thread (its on_background_error runs on the thread
// whose call met the error: a release's, on the thread releasing). Names why a release is in doubt.
thread_local std::string last_reported_error;

// With --on-lost term: how long COMMAND gets between SIGTERM and SIGKILL.
constexpr milliseconds kTermGrace{5'000};

// Signals that dblock passes on to COMMAND (and that end dblock while it waits for the lock).
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read_end;
  Fd write_end;
};

std::unique_ptr<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw Error(std::string("pipe2: ") + std::strerror(errno));
  }
  auto p = std::make_unique<Pipe>();
  p->read_end.reset(fds[0]);
  p->write_end.reset(fds[1]);
  return p;
}

// Blocks the forwarded signals and SIGCHLD in the calling thread (and so in every thread started
// afterwards) and opens a signalfd for them. `original_mask` is what COMMAND gets.
struct SignalSetup {
  sigset_t original_mask;
  Fd fd;

  SignalSetup() {
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap COMMAND before waitpid() can.
    ::signal(SIGCHLD, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kForwardedSignals) sigaddset(&set, sig);
    sigaddset(&set, SIGCHLD);
    // Once COMMAND has the terminal, dblock is in the background: with `stty tostop` its own
    // messages would stop it (and the renewal with it). Read and ignored like SIGCHLD.
    sigaddset(&set, SIGTTOU);
    if (int rc = ::pthread_sigmask(SIG_BLOCK, &set, &original_mask); rc != 0) {
      throw Error(std::string("pthread_sigmask: ") + std::strerror(rc));
    }
    int sfd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
      throw Error(std::string("signalfd: ") + std::strerror(errno));
    }
    fd.reset(sfd);
  }
};

// Reads every pending signal; returns them in arrival order.
std::vector<signalfd_siginfo> read_signals(int sfd) {
  std::vector<signalfd_siginfo> out;
  signalfd_siginfo info;
  for (;;) {
    ssize_t n = ::read(sfd, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      out.push_back(info);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return out;
  }
}

bool is_forwarded(int sig) {
  return std::find(std::begin(kForwardedSignals), std::end(kForwardedSignals), sig) != std::end(kForwardedSignals);
}

// One acquisition attempt with the configured wait: the lock, or null when not acquired.
using Acquire = std::function<std::unique_ptr<HeldLock>()>;

// Waits for the lock. A (possibly long) wait runs `acquire` on a helper thread while this thread
// watches the signalfd, so that Ctrl-C or SIGTERM ends a waiting dblock at once. Such a signal
// ends the process with 128+N; nothing is held (if the helper's acquire were to succeed in that
// very instant, a lease simply expires after its TTL and a session lock dies with the process,
// as after a crash).
std::unique_ptr<HeldLock> acquire_interruptibly(const Acquire& acquire, const RunOptions& o, int sfd) {
  if (o.wait.count() <= 0) {
    return acquire();  // one attempt: answers within a round trip
  }
  struct Outcome {
    std::unique_ptr<HeldLock> lock;
    std::exception_ptr error;
  };
  auto outcome = std::make_shared<Outcome>();
  std::shared_ptr<Pipe> done = make_pipe();
  std::thread helper([acquire, outcome, done] {
    try {
      outcome->lock = acquire();
    } catch (...) {
      outcome->error = std::current_exception();
    }
    char byte = 1;
    while (::write(done->write_end.get(), &byte, 1) < 0 && errno == EINTR) {
    }
  });
  for (;;) {
    pollfd fds[2] = {{done->read_end.get(), POLLIN, 0}, {sfd, POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "dblock: poll: %s\n", std::strerror(errno));
      std::fflush(nullptr);
      ::_exit(kExitError);
    }
    if (fds[0].revents != 0) {
      helper.join();
      if (outcome->error) std::rethrow_exception(outcome->error);
      return std::move(outcome->lock);
    }
    if (fds[1].revents != 0) {
      for (const signalfd_siginfo& info : read_signals(sfd)) {
        int sig = static_cast<int>(info.ssi_signo);
        if (is_forwarded(sig)) {
          std::fprintf(stderr, "dblock: %s while waiting for %s; not running the command\n", ::strsignal(sig),
                       locks_text(o).c_str());
          std::fflush(nullptr);
          // The helper thread is blocked in the acquire and cannot be cancelled: leave without
          // running destructors.
          ::_exit(kExitSignalBase + sig);
        }
      }
    }
  }
}

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

// The faults the engine rides over while a wait lasts: the same test as the engine's transient()
// (src/core/acquire.cc); keep the two in step.
bool fault_during_wait(const Error& e) {
  return e.retryable() || dynamic_cast<const ConnectionError*>(&e) != nullptr ||
         dynamic_cast<const InDoubtError*>(&e) != nullptr;
}

void report_not_acquired(LockManager& manager, const RunOptions& o) {
  std::string holder;
  try {
    // Session locks live in the server's lock table, not in the lease table.
    for (std::size_t i = 0; i < o.keys.size() && o.mode != RunMode::kSession && holder.empty(); ++i) {
      if (auto info = manager.inspect(o.keys[i])) {
        holder = ": " + std::string(o.keys.size() > 1 ? "'" + terminal_text(o.keys[i]) + "' " : "") + "held by " +
                 terminal_text(info->holder) + " (fence " + std::to_string(info->fence) + ", expires in " +
                 format_duration(milliseconds(info->expires_in_us / 1'000)) + ")";
      }
    }
  } catch (const std::exception&) {
    // Only decoration for the message.
  }
  std::fprintf(stderr, "dblock: %s not acquired within --wait %s%s\n", locks_text(o).c_str(),
               describe_wait(o.wait).c_str(), holder.c_str());
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
      // (it may be stuck on an unresponsive backend).
      if (!lost_ && lock_.lost()) note_lost("lost (safe-until passed or session gone)", /*act=*/true);
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
    last_reported_error.clear();
    ReleaseResult result = lock_.release();
    if (result == ReleaseResult::kInDoubt) {
      const std::string cause = last_reported_error.empty() ? "backend connection problem" : last_reported_error;
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

 public:
  // The last signal forwarded to COMMAND (0: none): someone asked dblock to stop.
  int signalled() const { return signalled_; }
};

// What is left of a wait of `wait` that ends at `ends`: kWaitForever stays; 0 once it has passed.
milliseconds left_of(milliseconds wait, std::chrono::steady_clock::time_point ends) {
  if (wait == kWaitForever) return wait;
  return std::max(milliseconds(0), std::chrono::ceil<milliseconds>(ends - std::chrono::steady_clock::now()));
}

// elect --forever: the pause between a leadership's end and the next campaign (a COMMAND that
// fails at once is not restarted in a tight loop; the candidates already in line go first).
constexpr milliseconds kCampaignPause{1'000};

// Waits up to `pause` for a forwarded signal on the signalfd `sfd`: the signal, or 0.
int signal_within(int sfd, milliseconds pause) {
  const auto until = Clock::now() + pause;
  for (;;) {
    for (const signalfd_siginfo& info : read_signals(sfd)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (is_forwarded(sig)) return sig;
    }
    const auto left = std::chrono::ceil<milliseconds>(until - Clock::now());
    if (left.count() <= 0) return 0;
    pollfd fd{sfd, POLLIN, 0};
    ::poll(&fd, 1, static_cast<int>(left.count()));
  }
}

// Empties the non-blocking descriptor `fd`.
void drain(int fd) {
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    return;
  }
}

// What the rounds of one dblock process share.
struct Rounds {
  const RunOptions& o;
  const Acquire& acquire;
  std::unique_ptr<LockManager>& manager;  // opened by the first acquire
  const SignalSetup& signals;
  int lost_read;  // the self-pipe on_lost writes to
};

// What one acquisition and one run of COMMAND came to.
struct Round {
  int status = kExitOk;  // dblock's exit status for it
  bool last = false;     // dblock ends here (not acquired, a signal), whatever --forever says
};

Round hold_and_run(const Rounds& r) {
  const RunOptions& o = r.o;
  std::unique_ptr<HeldLock> held;
  try {
    held = acquire_interruptibly(r.acquire, o, r.signals.fd.get());
  } catch (const Error& e) {
    // Once open, the engine rides over a failing service until the wait's deadline: what ends a
    // wait that way is "not acquired within --wait", with the fault as the reason. An open that
    // failed (69) and a single try (--wait 0) report the fault itself.
    if (r.manager == nullptr || o.wait.count() <= 0 || !fault_during_wait(e)) throw;
    std::fprintf(stderr, "dblock: %s not acquired within --wait %s: the service failed while waiting: %s\n",
                 locks_text(o).c_str(), describe_wait(o.wait).c_str(), terminal_text(e.what()).c_str());
    return {kExitNotAcquired, true};
  }
  if (!held) {
    report_not_acquired(*r.manager, o);
    return {kExitNotAcquired, true};
  }

  // A signal that came in during a one-shot acquire: do not start COMMAND.
  for (const signalfd_siginfo& info : read_signals(r.signals.fd.get())) {
    int sig = static_cast<int>(info.ssi_signo);
    if (is_forwarded(sig)) {
      std::fprintf(stderr, "dblock: %s before the command started; releasing %s\n", ::strsignal(sig),
                   locks_text(o).c_str());
      held->release();
      return {kExitSignalBase + sig, true};
    }
  }
  if (o.elect) {
    std::fprintf(stderr, "dblock: elected leader of %s, term %s\n", locks_text(o).c_str(),
                 held->fence() ? std::to_string(*held->fence()).c_str() : "?");
  }

  Supervisor supervisor(*held, o, r.signals.fd.get(), r.lost_read);
  const int status = supervisor.run(r.signals.original_mask);
  return {status, supervisor.signalled() != 0};
}

int run_or_elect(GlobalOptions global, std::vector<std::string> args, std::string_view command) {
  std::optional<RunOptions> parsed = parse_run(global, std::move(args), command);
  if (!parsed) return kExitOk;
  const RunOptions& o = *parsed;
  for (const std::string& key : o.keys) validate_lock_name(key);
  const std::string url = resolve_url(global);

  // Declared before the manager so that they outlive its threads and callbacks.
  SignalSetup signals;
  std::unique_ptr<Pipe> lost_pipe = make_pipe();

  ManagerOptions mo;
  mo.default_ttl = o.ttl;
  mo.on_background_error = [](const Error& e) {
    last_reported_error = e.what();
    std::fprintf(stderr, "dblock: warning: %s\n", terminal_text(e.what()).c_str());
  };
  // Opening the manager is part of the wait: one deadline for both.
  const auto wait_ends = o.wait == kWaitForever ? std::chrono::steady_clock::time_point::max()
                                                : std::chrono::steady_clock::now() + std::max(o.wait, milliseconds(0));
  const int lost_write = lost_pipe->write_end.get();
  auto on_lost = [lost_write, several = o.keys.size() > 1](const LostLease& lost) {
    // Runs on the renewal thread: only write to the self-pipe (non-blocking, one atomic write).
    std::string text = lost.reason.empty() ? std::string("lost") : lost.reason;
    if (several) text = "'" + terminal_text(lost.name) + "': " + text;
    text.resize(std::min<std::size_t>(text.size(), 400));
    text.push_back('\n');
    ssize_t n;
    do {
      n = ::write(lost_write, text.data(), text.size());
    } while (n < 0 && errno == EINTR);
  };

  // Written by the acquiring thread; read here only after it is done (acquire_interruptibly).
  std::unique_ptr<LockManager> manager;
  const Acquire acquire = [&]() -> std::unique_ptr<HeldLock> {
    if (manager == nullptr) manager = open_manager(url, mo, wait_ends);
    return acquire_with(*manager, o, left_of(o.wait, wait_ends), on_lost);
  };
  const Rounds rounds{o, acquire, manager, signals, lost_pipe->read_end.get()};
  for (;;) {
    const Round round = hold_and_run(rounds);
    if (!o.forever || round.last) return round.status;
    std::fprintf(stderr, "dblock: leadership of %s ended (exit status %d); campaigning again in %s\n",
                 locks_text(o).c_str(), round.status, format_duration(kCampaignPause).c_str());
    if (const int sig = signal_within(signals.fd.get(), kCampaignPause)) return kExitSignalBase + sig;
    drain(lost_pipe->read_end.get());  // a late report of the last lease
  }
}

}  // namespace

int run_command(GlobalOptions global, std::vector<std::string> args) {
  return run_or_elect(std::move(global), std::move(args), "run");
}

int elect_command(GlobalOptions global, std::vector<std::string> args) {
  return run_or_elect(std::move(global), std::move(args), "elect");
}

}  // namespace dblock::cli
