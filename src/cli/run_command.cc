// `dblock run` and `dblock elect`: hold a lock (waiting for it, or campaigning) while a child
// command runs (supervisor.h), once or, with elect --forever, again after each leadership.
//
// Signal handling: every signal the command forwards, and SIGCHLD, is blocked in the main thread
// *before* the LockManager starts its threads, so all threads inherit the block and the signals
// are only ever read synchronously from a signalfd by the main loop. The lost-lease callback
// (called on the manager's renewal thread) only writes the reason to a non-blocking self-pipe.
// The main loop poll()s on both and reaps the child with waitpid(); nothing sleeps to synchronise
// (signals.h, supervisor.h).
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
#include "signals.h"
#include "supervisor.h"
#include "textfile.h"

extern char** environ;

namespace dblock::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

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

// The faults that end a wait as "not acquired within --wait": those the engine rides over while a
// wait lasts (dblock::is_transient), and a TimeoutError: a lock wait on the server that the wait's
// deadline cut (MariaDB says so when too little of the wait is left for another).
bool fault_during_wait(const Error& e) {
  return is_transient(e) || dynamic_cast<const TimeoutError*>(&e) != nullptr;
}

void report_not_acquired(LockManager& manager, const RunOptions& o) {
  std::string holder;
  try {
    // Session locks live in the server's lock table, not in the lease table.
    for (std::size_t i = 0; i < o.keys.size() && o.mode != RunMode::kSession && holder.empty(); ++i) {
      if (auto info = manager.inspect(o.keys[i])) {
        holder = ": " + std::string(o.keys.size() > 1 ? "'" + terminal_text(o.keys[i]) + "' " : "") + "held by " +
                 terminal_text(info->holder) + " (fence " + std::to_string(info->fence) + ", " +
                 expiry_phrase(*info) + ")";
      }
    }
  } catch (const std::exception&) {
    // Only decoration for the message.
  }
  std::fprintf(stderr, "dblock: %s not acquired within --wait %s%s\n", locks_text(o).c_str(),
               describe_wait(o.wait).c_str(), holder.c_str());
}

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

// --metrics-textfile: a failure is a warning; dblock's status stays COMMAND's.
void write_job_figures(const std::string& path, const JobFigures& job) {
  if (const std::string error = write_atomically(path, job_text(job)); !error.empty()) {
    std::fprintf(stderr, "dblock: warning: --metrics-textfile: %s\n", terminal_text(error).c_str());
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
  JobFigures job;        // for --metrics-textfile
  int signalled = 0;     // the forwarded signal that ended COMMAND's run, 0 when none
};

// One round, its wait begun at `wait_started`; hold_and_run fills in the rest of its figures.
Round hold_and_run_timed(const Rounds& r, Clock::time_point wait_started) {
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
    return {o.not_acquired_exit, true, {}};
  }
  if (!held) {
    // --skipped-exit 0: a skipped run is no error, and says nothing (cron mails what a job prints).
    if (o.not_acquired_exit != 0) report_not_acquired(*r.manager, o);
    return {o.not_acquired_exit, true, {}};
  }
  Round round;
  round.job.acquired = true;
  const Clock::time_point acquired_at = Clock::now();
  round.job.waited = acquired_at - wait_started;
  round.job.fence = held->fence();

  // A signal that came in during a one-shot acquire: do not start COMMAND.
  for (const signalfd_siginfo& info : read_signals(r.signals.fd.get())) {
    int sig = static_cast<int>(info.ssi_signo);
    if (is_forwarded(sig)) {
      std::fprintf(stderr, "dblock: %s before the command started; releasing %s\n", ::strsignal(sig),
                   locks_text(o).c_str());
      held->release();
      return {kExitSignalBase + sig, true, {}};
    }
  }
  // COMMAND starts only on a lock still held: a lease lost between its grant and now (past its
  // safe-until already, a lost event) is let go, and this round counts as not acquired.
  if (held->lost()) {
    std::fprintf(stderr, "dblock: %s was lost before the command started; not running it\n", locks_text(o).c_str());
    held->release();
    return {o.not_acquired_exit, true, {}};
  }
  if (o.elect) {
    std::fprintf(stderr, "dblock: elected leader of %s, term %s\n", locks_text(o).c_str(),
                 held->fence() ? std::to_string(*held->fence()).c_str() : "?");
  }

  const Supervised run = supervise(*held, o, r.signals.fd.get(), r.lost_read, r.signals.original_mask);
  round.status = run.status;
  round.last = run.signalled != 0;
  round.signalled = run.signalled;
  round.job.held = Clock::now() - acquired_at;
  round.job.lost = run.lost;
  return round;
}

Round hold_and_run(const Rounds& r) {
  const RunOptions& o = r.o;
  const Clock::time_point wait_started = Clock::now();
  Round round = hold_and_run_timed(r, wait_started);
  round.job.keys = o.keys;
  round.job.exit_status = round.status;
  round.job.ended_at = std::chrono::system_clock::now();
  if (!round.job.acquired) round.job.waited = Clock::now() - wait_started;
  return round;
}

int run_or_elect(GlobalOptions global, std::vector<std::string> args, std::string_view command) {
  std::optional<RunOptions> parsed = parse_run(global, std::move(args), command);
  if (!parsed) return kExitOk;
  const RunOptions& o = *parsed;
  for (const std::string& key : o.keys) validate_lock_name(key);
  const std::string url = resolve_url(global);
  if (!o.metrics_textfile.empty()) {
    if (const std::string problem = textfile_problem(o.metrics_textfile); !problem.empty()) {
      std::fprintf(stderr, "dblock: %s; not taking %s\n", terminal_text(problem).c_str(), locks_text(o).c_str());
      return kExitCannotCreate;
    }
  }

  // Declared before the manager so that they outlive its threads and callbacks.
  SignalSetup signals;
  std::unique_ptr<Pipe> lost_pipe = make_pipe();

  ManagerOptions mo;
  mo.default_ttl = o.ttl;
  mo.on_background_error = [](const Error& e) {
    last_reported_error() = e.what();
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
    if (!o.metrics_textfile.empty()) write_job_figures(o.metrics_textfile, round.job);
    // elect --forever ends by a signal only, and says so whenever it came: during a campaign,
    // during COMMAND (even one that ended on its own just before it was forwarded), between terms.
    if (o.forever && round.signalled != 0) return kExitSignalBase + round.signalled;
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
