// src/cli/signals.h — how `dblock run` and `dblock elect` take signals: the forwarded ones and
// SIGCHLD are blocked in every thread and read synchronously from a signalfd by the main loop.
#ifndef DBLOCK_CLI_SIGNALS_H_
#define DBLOCK_CLI_SIGNALS_H_

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <vector>

namespace dblock::cli {

// Signals that dblock passes on to COMMAND (and that end dblock while it waits for the lock).
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

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

// Blocks the forwarded signals and SIGCHLD in the calling thread (and so in every thread started
// afterwards) and opens a signalfd for them. `original_mask` is what COMMAND gets.
struct SignalSetup {
  sigset_t original_mask;
  Fd fd;

  SignalSetup();  // throws Error when the mask or the signalfd cannot be set up
};

// Reads every pending signal from the signalfd `sfd`; returns them in arrival order.
std::vector<signalfd_siginfo> read_signals(int sfd);

// Whether dblock passes `sig` on to COMMAND.
bool is_forwarded(int sig);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_SIGNALS_H_
