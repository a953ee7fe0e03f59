// Signal set-up and reading for `dblock run` and `dblock elect` (signals.h).
#include "signals.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "dblock/errors.h"

namespace dblock::cli {

SignalSetup::SignalSetup() {
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

}  // namespace dblock::cli
